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
// returns the guest's output, or img itself when the guest wrote none. img
// is not changed.
func (t Transformation) Transform(ctx context.Context, img *image.NRGBA, params map[string]string, metadata map[string]any) (*image.NRGBA, error) {
	in := compact(img)
	c := &call{params: params, in: in, metadata: metadata}
	if err := t.invoke(ctx, c); err != nil {
		return nil, err
	}
	if c.out == nil {
		return img, nil
	}
	return c.out, nil
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
