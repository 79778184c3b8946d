package engine

import (
	"fmt"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// modulate scales brightness and saturation and rotates the hue, all in
// percent, as ImageMagick's modulateImage(b, s, h) does in HSL:
// L x b/100, S x s/100 and the hue turned by (h-100) x 1.8 degrees, on the
// sRGB values. libvips has no HSL space; the conversion, the modulation and
// the way back are one graph of libvips arithmetic (vt_modulate_hsl in
// vipscgo.go), so the image is never copied out of libvips.
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
		b: p.Int("b"),
		s: p.Int("s"),
		h: p.Int("h"),
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// hueShift returns ImageMagick's hue change, fmod(h-100, 200)/200 of a turn,
// in sextants of the HSL hexagon, normalised to [0, 6).
func (m modulate) hueShift() float64 {
	dh := 6 * math.Mod(float64(m.h-100), 200) / 200
	return dh - 6*math.Floor(dh/6)
}

func (m modulate) Apply(s *State) error {
	if m.b == 100 && m.s == 100 && m.h == 100 {
		return nil
	}
	if err := toSRGB8(s.Image); err != nil {
		return err
	}
	alpha, err := detachAlpha(s.Image)
	if err != nil {
		return err
	}
	err = modulateHSL(s.Image, float64(m.b)/100, float64(m.s)/100, m.hueShift())
	if err == nil {
		// Out-of-range values clip, as ImageMagick's ClampToQuantum.
		err = castTo(s.Image, vips.BandFormatUchar)
	}
	if err != nil {
		if alpha != nil {
			alpha.Close()
		}
		return fmt.Errorf("modulate: %w", err)
	}
	return reattachAlpha(s.Image, alpha)
}

var _ Step = modulate{}
