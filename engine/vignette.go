package engine

import (
	"fmt"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// vignette darkens (or tints) the edges: a radial
// gradient from inner at the centre to outer, linear in distance and reaching
// outer at radius max(sW,sH)/2 of a canvas scale times the image, is
// Multiply-composited over the image. Only the W x H window of that canvas is
// ever built: distance from XYZ coordinates, sqrt through libvips gamma.
type vignette struct {
	inner, outer Color
	scale        float64
}

func init() {
	register("vignette", describe(parseVignette, "Darkens or tints the edges of the image.",
		colorParam("inner", "Colour at the centre, or none.").def("none").orNone(),
		colorParam("outer", "Colour at the edges, or none.").def("000").orNone(),
		numParam("scale", 1, 100, "Size of the vignette relative to the image.").def(1.5),
	))
}

func parseVignette(p *Params) (Step, error) {
	v := vignette{
		inner: p.Color("inner"),
		outer: p.Color("outer"),
		scale: p.Float("scale"),
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return v, nil
}

func (v vignette) Apply(s *State) error {
	if err := toSRGB8(s.Image); err != nil {
		return err
	}
	W, H := s.Image.Width(), s.Image.Height()
	sW, sH := math.Floor(float64(W)*v.scale), math.Floor(float64(H)*v.scale)
	// The canvas is cropped at (floor((sW-W)/2), floor((sH-H)/2)); its centre
	// lands here in image coordinates (pixel centres at +0.5).
	cx := sW/2 - math.Floor((sW-float64(W))/2) - 0.5
	cy := sH/2 - math.Floor((sH-float64(H))/2) - 0.5
	radius := math.Max(sW, sH) / 2
	overlay, err := v.gradient(W, H, cx, cy, radius)
	if err != nil {
		return fmt.Errorf("vignette: %w", err)
	}
	defer overlay.Close()
	bands := s.Image.Bands()
	if err := s.Image.Composite(overlay, vips.BlendModeMultiply, 0, 0); err != nil {
		return fmt.Errorf("vignette: %w", err)
	}
	if s.Image.Bands() > bands {
		if err := s.Image.ExtractBand(0, bands); err != nil {
			return fmt.Errorf("vignette: %w", err)
		}
	}
	return castTo(s.Image, vips.BandFormatUchar)
}

// gradient builds the RGBA overlay: t = min(1, distance/radius), colour and
// alpha interpolated linearly from inner to outer (ImageMagick interpolates
// unpremultiplied, `none` being transparent black).
func (v vignette) gradient(w, h int, cx, cy, radius float64) (*vips.ImageRef, error) {
	dx, dy, err := centredCoords(w, h, cx, cy)
	if err != nil {
		return nil, err
	}
	defer dy.Close()
	defer dx.Close()
	t := dx
	inner := []float64{float64(v.inner.R), float64(v.inner.G), float64(v.inner.B), float64(v.inner.A)}
	outer := []float64{float64(v.outer.R), float64(v.outer.G), float64(v.outer.B), float64(v.outer.A)}
	a, b := make([]float64, 4), make([]float64, 4)
	for i := range a {
		a[i] = (outer[i] - inner[i]) / 255 // per unit of t in 0..255
		b[i] = inner[i] + 0.5              // +0.5: the cast truncates
	}
	steps := []func() error{
		func() error { return dx.Multiply(dx) },
		func() error { return dy.Multiply(dy) },
		func() error { return t.Add(dy) },
		// (d/radius)^2 -> d/radius: libvips gamma raises to 1/exponent.
		func() error { return t.Linear1(1/(radius*radius), 0) },
		func() error { return t.Gamma(2) },
		// Scale to 0..255 and clip at the radius with an 8-bit cast.
		func() error { return t.Linear1(255, 0) },
		func() error { return t.Cast(vips.BandFormatUchar) },
		func() error { return t.Linear(a, b) }, // one band in, four out
		func() error { return t.Cast(vips.BandFormatUchar) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return t.CopyChangingInterpretation(vips.InterpretationSRGB)
}

var _ Step = vignette{}
