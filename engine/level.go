package engine

import (
	"fmt"
	"math"
	"strings"

	"github.com/davidbyttow/govips/v2/vips"
)

// level applies a gamma curve to some channels: out = in^(1/gamma), as
// ImageMagick's levelImage(0, gamma, QuantumRange, channel). Channel `all`
// is Imagick's CHANNEL_ALL, which levels the alpha band too (a half
// transparent pixel at amount 50 becomes 0.5^(1/5) = 0.87 opaque).
type level struct {
	r, g, b, alpha bool
	gamma          float64
}

func init() {
	register("level", describe(parseLevel, "Adjusts the gamma of some or all colour channels.",
		stringParam("channel", "all, or letters of rgbcmyk.").def("all"),
		intParam("amount", -100, 100, "Strength; negative values darken.").def(1),
	))
}

func parseLevel(p *Params) (Step, error) {
	var l level
	channel := strings.ToLower(p.String("channel"))
	if channel == "all" {
		l.r, l.g, l.b, l.alpha = true, true, true, true
	} else if channel == "" || strings.Trim(channel, "rgbcmyk") != "" {
		p.Fail("Invalid value for channel: %q (use all or letters of rgbcmyk)", channel)
	} else {
		// As in ImageMagick, c, m and y are the same bits as r, g and b; k
		// (black) has no counterpart in an sRGB image and changes nothing.
		l.r = strings.ContainsAny(channel, "rc")
		l.g = strings.ContainsAny(channel, "gm")
		l.b = strings.ContainsAny(channel, "by")
	}
	l.gamma = levelGamma(p.Int("amount"))
	if err := p.Err(); err != nil {
		return nil, err
	}
	return l, nil
}

// levelGamma maps amount to Imbo's gamma: 1-|a|/100 below zero,
// floor(a/10.1)+1 from zero up, so the default 1 is a no-op.
func levelGamma(amount int) float64 {
	if amount < 0 {
		return 1 - math.Abs(float64(amount))/100
	}
	return math.Floor(float64(amount)/10.1) + 1
}

func (l level) Apply(s *State) error {
	if l.gamma == 1 || !(l.r || l.g || l.b) {
		return nil
	}
	var curve, identity [256]uint8
	for i := range curve {
		identity[i] = uint8(i)
		v := 0.0
		if l.gamma > 0 {
			v = 255 * math.Pow(float64(i)/255, 1/l.gamma)
		} else if i == 255 {
			v = 255 // amount -100: gamma 0, everything but white goes black
		}
		curve[i] = uint8(math.Round(v))
	}
	if l.alpha {
		return levelAll(s.Image, &curve)
	}
	pick := func(on bool) *[256]uint8 {
		if on {
			return &curve
		}
		return &identity
	}
	return mapColourBands(s.Image, pick(l.r), pick(l.g), pick(l.b))
}

// levelAll applies curve to every band, alpha included: a one-band table
// makes maplut look each band up in it.
func levelAll(img *vips.ImageRef, curve *[256]uint8) error {
	if err := toSRGB8(img); err != nil {
		return err
	}
	lut, err := lutFromTables(curve)
	if err != nil {
		return err
	}
	defer lut.Close()
	if err := img.Maplut(lut); err != nil {
		return fmt.Errorf("level: %w", err)
	}
	return nil
}

var _ Step = level{}
