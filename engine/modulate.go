package engine

import (
	"fmt"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// modulate scales brightness and saturation and rotates the hue, all in
// percent as ImageMagick's modulateImage(b, s, h). ImageMagick works in HSL;
// libvips has no HSL space, so this works in CIE LCh (govips Modulate):
// L x b/100, C x s/100 (and x b/100 when darkening) and hue + (h-100) x 1.8
// degrees. Hues and saturation
// are perceptual rather than HSL's, which is close and arguably better.
type modulate struct {
	b, s, h int
}

func init() {
	register("modulate", describe(parseModulate, "Changes brightness, saturation and hue, in percent.",
		intParam("b", 0, modulateMax, "Brightness in percent.").def(100),
		intParam("s", 0, modulateMax, "Saturation in percent.").def(100),
		intParam("h", 0, modulateMax, "Hue rotation in percent; 100 keeps the hue.").def(100),
	))
}

// modulateMax bounds b, s and h; 1000% is far past anything useful.
const modulateMax = 1000

func parseModulate(p *Params) (Step, error) {
	m := modulate{
		b: p.Int("b", 100, 0, modulateMax),
		s: p.Int("s", 100, 0, modulateMax),
		h: p.Int("h", 100, 0, modulateMax),
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m modulate) Apply(s *State) error {
	if m.b == 100 && m.s == 100 && m.h == 100 {
		return nil
	}
	if err := toSRGB8(s.Image); err != nil {
		return err
	}
	hue := math.Mod(float64(m.h-100)*1.8, 360)
	// Darkening scales chroma with lightness, as HSL does (b=0 is black,
	// not a dark out-of-gamut colour).
	chroma := float64(m.s) / 100 * math.Min(float64(m.b)/100, 1)
	if err := s.Image.Modulate(float64(m.b)/100, chroma, hue); err != nil {
		return fmt.Errorf("modulate: %w", err)
	}
	// Back from LCh the image is float sRGB; out-of-gamut values clip here.
	if err := s.Image.Cast(vips.BandFormatUchar); err != nil {
		return fmt.Errorf("modulate: %w", err)
	}
	return nil
}

var _ Step = modulate{}
