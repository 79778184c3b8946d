package engine

import (
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// maxSide bounds every size parameter; the engine's pixel limits then apply
// to what a chain produces.
const maxSide = 65535

// ResizeExact resizes img to exactly w x h with a Lanczos3 kernel, in
// premultiplied alpha so transparent pixels do not bleed colour. The aspect
// ratio is not kept when w x h does not have it. It is a no-op when img is
// already w x h.
func ResizeExact(img *vips.ImageRef, w, h int) error {
	W, H := img.Width(), img.Height()
	if W == w && H == h {
		return nil
	}
	if err := img.ResizeWithVScale(float64(w)/float64(W), float64(h)/float64(H), vips.KernelLanczos3); err != nil {
		return err
	}
	return fitExact(img, w, h)
}

// fitExact trims or extends (by copying the edge) a side that libvips'
// rounding left one pixel off the target.
func fitExact(img *vips.ImageRef, w, h int) error {
	W, H := img.Width(), img.Height()
	if W == w && H == h {
		return nil
	}
	if W > w || H > h {
		if err := img.ExtractArea(0, 0, min(W, w), min(H, h)); err != nil {
			return err
		}
	}
	if img.Width() < w || img.Height() < h {
		return img.Embed(0, 0, w, h, vips.ExtendCopy)
	}
	return nil
}

// resizeTo is ResizeExact on the state's image (which may come shrunk from
// the decoder: the target is always in chain geometry).
// Afterwards the image is in chain geometry again.
func (s *State) resizeTo(w, h int) error {
	s.loadW, s.loadH = 0, 0
	return ResizeExact(s.Image, w, h)
}

// cropTo extracts the rectangle (x, y, w, h), given in chain geometry, from
// the state's image, scaling it when the decoder shrank the image.
func (s *State) cropTo(x, y, w, h int) error {
	fx, fy := s.shrunk()
	if fx != 1 || fy != 1 {
		iw, ih := s.Image.Width(), s.Image.Height()
		x2, y2 := int(math.Round(float64(x+w)*fx)), int(math.Round(float64(y+h)*fy))
		x, y = int(math.Round(float64(x)*fx)), int(math.Round(float64(y)*fy))
		x, y = min(max(x, 0), iw-1), min(max(y, 0), ih-1)
		w, h = max(min(x2, iw)-x, 1), max(min(y2, ih)-y, 1)
	}
	if x == 0 && y == 0 && w == s.Image.Width() && h == s.Image.Height() {
		return nil
	}
	return s.Image.ExtractArea(x, y, w, h)
}

// roundMin1 rounds a positive ratio product half away from zero, as PHP's
// round() does, with a minimum of 1.
func roundMin1(v float64) int { return max(int(math.Round(v)), 1) }

// rgba returns c as a libvips RGBA colour, opaque unless c is transparent.
func rgba(c Color) *vips.ColorRGBA { return &vips.ColorRGBA{R: c.R, G: c.G, B: c.B, A: c.A} }

// toSRGB converts grey, 16-bit and other colourspaces to 8-bit sRGB, so that
// colour parameters (0-255 per channel) mean what they say.
func toSRGB(img *vips.ImageRef) error {
	if img.Interpretation() == vips.InterpretationSRGB && img.BandFormat() == vips.BandFormatUchar {
		return nil
	}
	return img.ToColorSpace(vips.InterpretationSRGB)
}
