package engine

import "math"

// contrast is ImageMagick's sigmoidal contrast, applied
// per colour channel to gamma-encoded sRGB through a lookup table.
type contrast struct {
	alpha, beta float64
}

func init() {
	register("contrast", describe(parseContrast, "Changes the contrast with a sigmoidal curve.",
		numParam("alpha", -100, 100, "Strength; negative values reduce contrast.").def(1),
		numParam("sharpen", -100, 100, "Older name of alpha; alpha wins when both are given."),
		numParam("beta", 0, 1, "Midpoint of the curve, 0 to 1.").def(0.5),
	))
}

func parseContrast(p *Params) (Step, error) {
	c := contrast{alpha: 1}
	// `sharpen` is the legacy name of alpha; alpha wins when both are given.
	legacy := p.Has("sharpen")
	if p.Has("alpha") {
		c.alpha = p.Float("alpha")
		if legacy {
			p.Float("sharpen") // still validated
		}
	} else if legacy {
		c.alpha = p.Float("sharpen")
	}
	c.beta = p.Float("beta")
	if err := p.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c contrast) Apply(s *State) error {
	if math.Abs(c.alpha) < 1e-6 { // 0 is a no-op, and near 0 the curve degenerates
		return nil
	}
	var t [256]uint8
	for i := range t {
		t[i] = uint8(math.Round(255 * sigmoidal(c.alpha, c.beta, float64(i)/255)))
	}
	return mapColourBands(s.Image, &t, &t, &t)
}

// sigmoidal maps x in [0,1] through the scaled sigmoid with contrast |a| and
// midpoint b, or through its inverse when a < 0.
func sigmoidal(a, b, x float64) float64 {
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(math.Abs(a)*(b-x))) }
	s0, s1 := sig(0), sig(1)
	var y float64
	if a > 0 {
		y = (sig(x) - s0) / (s1 - s0)
	} else {
		v := (s1-s0)*x + s0
		v = math.Min(math.Max(v, 1e-12), 1-1e-12)
		y = b - math.Log(1/v-1)/math.Abs(a)
	}
	return math.Min(math.Max(y, 0), 1)
}

var _ Step = contrast{}
