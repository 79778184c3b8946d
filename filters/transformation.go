package filters

import (
	"context"
	"image"
)

// Transformation is a loaded filter of kind transformation: a named image
// operation on straight-alpha sRGB pixels. It satisfies the engine's guest
// interface without importing the engine.
type Transformation struct{ *Filter }

// CheckParams validates the raw parameters of one `t[]` step against the
// manifest's schema and returns them normalised, defaults filled in. It
// touches no pixel; every error is KindInvalid naming the parameter.
func (t Transformation) CheckParams(raw map[string]string) (map[string]string, error) {
	return t.manifest.Normalise(raw)
}

// Transform runs the guest on img with params (as CheckParams returned
// them); metadata is the image's metadata, which the guest may read. It
// returns a copy of the guest's output, or img itself when the guest wrote
// none. img is not changed.
func (t Transformation) Transform(ctx context.Context, img *image.NRGBA, params map[string]string, metadata map[string]any) (*image.NRGBA, error) {
	var out *image.NRGBA
	err := t.TransformTo(ctx, img, params, metadata, func(v *image.NRGBA) error {
		// Why reuse: a guest that writes twice should not allocate twice.
		if out == nil || out.Rect != v.Rect {
			out = image.NewNRGBA(v.Rect)
		}
		copy(out.Pix, v.Pix)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return img, nil
	}
	return out, nil
}

// Reserve waits for the right to check one of the filter's instances out
// before the caller decodes anything for a call, as a call waits (the
// filter's queue and its queue wait), and fails as a call does, busy, when
// the queue is full or the wait runs out: a request that would be turned
// away then costs no decoding. The filter's next call under the returned
// context uses it and does not wait again; release gives it back if no
// call used it, and does nothing after one did (call it when the request
// ends, in every case). It holds an instance of the filter while the
// caller decodes, which is why a caller reserves for one step only.
func (t Transformation) Reserve(ctx context.Context) (_ context.Context, release func(), _ error) {
	return t.reserve(ctx)
}

// TransformTo runs the guest like Transform, but hands each output the guest
// sets (pixels_write) to emit at once, as a view of the guest's memory that
// is valid only until emit returns: emit copies what it keeps. This saves
// the copy into Go memory when the consumer copies the pixels anyway (the
// engine, into libvips). A guest that writes no output never calls emit; a
// guest that writes twice calls it twice, the last output winning. An error
// of emit ends the call with that error.
func (t Transformation) TransformTo(ctx context.Context, img *image.NRGBA, params map[string]string, metadata map[string]any, emit func(*image.NRGBA) error) error {
	c := &call{params: params, in: compact(img), metadata: metadata, emit: emit}
	return t.invoke(ctx, c)
}

// compact returns img with its origin at (0, 0) and stride 4*width, as the
// ABI hands pixels to guests, copying only when it is not already so.
func compact(img *image.NRGBA) *image.NRGBA {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if img.Rect.Min == (image.Point{}) && img.Stride == 4*w && len(img.Pix) == 4*w*h {
		return img
	}
	out := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		copy(out.Pix[y*out.Stride:(y+1)*out.Stride], img.Pix[img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y+y):])
	}
	return out
}
