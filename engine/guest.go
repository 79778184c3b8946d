package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"

	"github.com/davidbyttow/govips/v2/vips"
)

// Guest is a transformation that runs outside libvips, on plain pixels: a
// WebAssembly filter. The engine parses its parameters through CheckParams
// before any pixel is decoded, and hands it the image as 8-bit sRGB with
// straight alpha, stride 4*width; it may return an image of another size.
// Package filters satisfies this interface without importing the engine.
type Guest interface {
	// CheckParams validates the raw parameters of one step and returns them
	// normalised; its error is a public message naming the parameter.
	CheckParams(raw map[string]string) (map[string]string, error)
	// TransformTo runs the guest on img (which it must not change) with
	// the normalised parameters and the image's metadata. It hands each
	// output the guest sets to emit at once, as a view valid only until
	// emit returns (emit copies it); the last one wins. A guest that sets
	// no output leaves the image unchanged and never calls emit. An error
	// of emit ends the call with that error.
	TransformTo(ctx context.Context, img *image.NRGBA, params map[string]string, metadata map[string]any, emit func(*image.NRGBA) error) error
	// ContentHash identifies the guest's code and manifest; the variant
	// cache key includes it, so a changed filter never serves stale variants.
	ContentHash() string
}

// Reserver is a Guest that can wait, before any pixel is decoded, for
// room for its next call (an instance of its filter) and fail at once when
// it has none (its queue is full or the wait ran out). The engine reserves
// for a chain's first guest step before it takes a pipeline slot, so a
// request it would turn away costs no decoding, and a request that has to
// queue for the guest queues before it decodes. Reserve returns ctx
// carrying the reservation, which the guest's next call under it uses,
// and a release the engine calls when the render ends (a no-op once a
// call used it); on an error there is nothing to release.
type Reserver interface {
	Reserve(ctx context.Context) (_ context.Context, release func(), _ error)
}

// reserve reserves room for the first guest step of c that can reserve
// (Reserver); the caller calls release when the render ends. Why only the
// first: a reservation holds an instance of its filter while the render
// decodes and runs the native steps before it, and several held at once by
// renders waiting for each other's filters would only add to the waits.
func (c Chain) reserve(ctx context.Context) (_ context.Context, release func(), _ error) {
	for _, st := range c.steps {
		if g, ok := st.(*guestStep); ok {
			if r, ok := g.guest.(Reserver); ok {
				return r.Reserve(ctx)
			}
		}
	}
	return ctx, func() {}, nil
}

// Canaried is a Guest that serves another version of itself (a canary)
// for some images: For returns the Guest that serves the image subject
// names (Hints.Subject), the same one every time for the same subject.
// The variant cache key holds the chosen one's ContentHash.
type Canaried interface {
	Guest
	For(subject string) Guest
}

// Guests finds guest transformations by name. The set may change while the
// engine runs (a filter reload); a chain keeps the guest it resolved.
type Guests interface {
	Guest(name string) (Guest, bool)
	GuestNames() []string
}

// SetGuests makes the registry look names it does not hold up in g. Call
// it at start-up, before the engine serves. Native names always win.
func (r *Registry) SetGuests(g Guests) { r.guests = g }

// guestTransformation is the Transformation of one guest.
type guestTransformation struct {
	name  string
	guest Guest
}

// Parse checks the parameters through the guest's schema.
func (t guestTransformation) Parse(p *Params) (Step, error) {
	raw := make(map[string]string, len(p.vals))
	for k, v := range p.vals {
		p.used[k] = true
		raw[k] = v
	}
	params, err := t.guest.CheckParams(raw)
	if err != nil {
		// Why not always 400: a guest that cannot run yet (a filter still
		// loading) fails with its own 5xx, kept in the chain for the api.
		if hasStatus(err, 500) {
			return nil, fmt.Errorf("engine: %s: %w", t.name, err)
		}
		return nil, invalidf("%s: %s", t.name, publicMessage(err))
	}
	return &guestStep{name: t.name, guest: t.guest, params: params}, nil
}

// Describe returns the guest's description when it gives one, always of
// kind "wasm".
func (t guestTransformation) Describe() Description {
	d := Description{Name: t.name, Params: []ParamDesc{}}
	if ds, ok := t.guest.(Describer); ok {
		d = ds.Describe()
	}
	d.Kind = "wasm"
	return d
}

// publicMessage is the client-facing text of a guest's error.
func publicMessage(err error) string {
	if pm, ok := err.(interface{ PublicMessage() string }); ok {
		return pm.PublicMessage()
	}
	return err.Error()
}

// guestStep is one parsed guest step.
type guestStep struct {
	name   string
	guest  Guest
	params map[string]string
}

// key is the step's part of the variant cache key: its normalised
// parameters and the guest's content hash.
func (g *guestStep) key() string {
	return Spec{Name: g.name + "@" + g.guest.ContentHash(), Params: g.params}.String()
}

// Apply hands the image's pixels, straight from libvips' buffer, to the
// guest and copies its output into libvips.
func (g *guestStep) Apply(s *State) error {
	hadAlpha := s.Image.HasAlpha()
	in, free, err := exportNRGBA(s.Image)
	if err != nil {
		return err
	}
	defer free()
	// The guest waits for and runs on its own admission, not on a
	// pipeline slot (slot.go). Its output is copied into a buffer libvips
	// reads in place, which computes nothing; the chain goes on once the
	// render has a slot again.
	sl := slotOf(s.Ctx)
	sl.release()
	var out *vips.ImageRef
	err = g.guest.TransformTo(s.Ctx, in, g.params, s.Env.Metadata, func(v *image.NRGBA) error {
		ref, err := importGuestNRGBA(v, !hadAlpha)
		if err != nil {
			return err
		}
		if out != nil {
			out.Close()
		}
		out = ref
		return nil
	})
	if err == nil {
		err = sl.retake(s.Ctx)
	}
	if err != nil {
		if out != nil {
			out.Close()
		}
		return err
	}
	if out == nil {
		// The guest wrote nothing: s.Image already holds in, less the
		// alpha band the export added.
		if !hadAlpha {
			if err := s.Image.ExtractBand(0, 3); err != nil {
				return fmt.Errorf("guest output: %w", err)
			}
		}
		return nil
	}
	swapImage(s, out)
	return nil
}

// exportNRGBA turns img, in place, into 8-bit sRGB RGBA and returns its
// pixels as straight-alpha NRGBA in libvips' own buffer, not copied into Go
// memory; the caller calls free when done with them.
func exportNRGBA(img *vips.ImageRef) (pix *image.NRGBA, free func(), err error) {
	if err := toSRGB8(img); err != nil {
		return nil, nil, err
	}
	switch b := img.Bands(); {
	case b == 3:
		if err := img.BandJoinConst([]float64{255}); err != nil {
			return nil, nil, fmt.Errorf("guest input: add alpha: %w", err)
		}
	case b > 4:
		if err := img.ExtractBand(0, 4); err != nil {
			return nil, nil, fmt.Errorf("guest input: %w", err)
		}
	}
	w, h := img.Width(), img.Height()
	buf, free, err := pixels.get(4 * w * h)
	if err != nil {
		return nil, nil, fmt.Errorf("guest input: %w", err)
	}
	if err := writeInto(img, buf); err != nil {
		free()
		return nil, nil, fmt.Errorf("guest input: %w", err)
	}
	return &image.NRGBA{Pix: buf, Stride: 4 * w, Rect: image.Rect(0, 0, w, h)}, free, nil
}

// importGuestNRGBA copies a guest's output into a pooled buffer that
// libvips reads as sRGB in place. When the input had no alpha and the
// output is opaque, the alpha band is dropped again, so a JPEG stays a
// three-band image.
func importGuestNRGBA(out *image.NRGBA, dropOpaqueAlpha bool) (*vips.ImageRef, error) {
	w, h := out.Rect.Dx(), out.Rect.Dy()
	if w <= 0 || h <= 0 || out.Stride != 4*w || len(out.Pix) < 4*w*h {
		return nil, fmt.Errorf("guest output: %dx%d with stride %d and %d bytes", w, h, out.Stride, len(out.Pix))
	}
	buf, free, err := pixels.get(4 * w * h)
	if err != nil {
		return nil, fmt.Errorf("guest output: %w", err)
	}
	copy(buf, out.Pix[:4*w*h])
	// A vessel for the image: govips makes ImageRefs only of its own.
	ref, err := vips.Black(1, 1)
	if err != nil {
		free()
		return nil, fmt.Errorf("guest output: %w", err)
	}
	if err := rgbaInPlace(ref, buf, w, h, free); err != nil {
		ref.Close()
		free()
		return nil, fmt.Errorf("guest output: %w", err)
	}
	if dropOpaqueAlpha && opaque(out) {
		if err := ref.ExtractBand(0, 3); err != nil {
			ref.Close()
			return nil, fmt.Errorf("guest output: %w", err)
		}
	}
	return ref, nil
}

// opaque reports whether every alpha byte is 255. It reads 16 pixels at a
// time as eight words: at 12 MP 1.2 ms where a byte-by-byte loop took 4.4 ms,
// beside about 10 ms for the copies around a guest.
func opaque(img *image.NRGBA) bool {
	const alpha = 0xff000000ff000000
	pix := img.Pix
	n := len(pix) &^ 63
	le := binary.LittleEndian
	for i := 0; i < n; i += 64 {
		p := pix[i : i+64 : i+64]
		w := le.Uint64(p) & le.Uint64(p[8:]) & le.Uint64(p[16:]) & le.Uint64(p[24:]) &
			le.Uint64(p[32:]) & le.Uint64(p[40:]) & le.Uint64(p[48:]) & le.Uint64(p[56:])
		if w&alpha != alpha {
			return false
		}
	}
	for i := n + 3; i < len(pix); i += 4 {
		if pix[i] != 255 {
			return false
		}
	}
	return true
}

func (guestStep) readsMetadata() {}

// hasStatus reports whether err carries an HTTP status of its own (as a
// guest's error does) of at least min.
func hasStatus(err error, min int) bool {
	var st interface{ HTTPStatus() int }
	return errors.As(err, &st) && st.HTTPStatus() >= min
}
