package engine

import (
	"slices"
	"strconv"
	"strings"
)

// compress sets the output compression level (0-100): the JPEG, WebP and
// AVIF quality; for PNG the tens digit is the zlib level and the ones digit
// the filter. It has no effect on GIF. level=auto picks, per image, the
// lowest quality whose output meets a perceptual target (autoquality.go).
type compress struct {
	level  int
	auto   bool
	target string
}

func init() {
	register("compress", describe(parseCompress, "Sets the output quality.",
		stringParam("level", "Quality, 0 (smallest) to 100 (best), or auto: the lowest quality meeting a perceptual target.").required(),
		enumParam("target", QualityLevels, "With level=auto: the perceptual target (default: autoQuality.target)."),
	))
}

// WithAutoQuality returns the chain ts with an auto-quality step added at
// its end, as the quality request parameter asks: compress:level=auto, with
// the named target (one of QualityLevels; "" for the configured one). A
// chain that has a compress step of its own is returned as it is: an
// explicit level wins. The step makes the choice part of the chain, so the
// variant cache keys it like any other (Chain.Key). Another target is
// KindInvalid, whatever the chain.
func WithAutoQuality(ts []string, target string) ([]string, error) {
	if target != "" && !slices.Contains(QualityLevels, target) {
		return nil, invalidf("Invalid value for target: %q (%s)", target, strings.Join(QualityLevels, ", "))
	}
	for _, t := range ts {
		if ParseSpec(t).Name == "compress" {
			return ts, nil
		}
	}
	step := Spec{Name: "compress", Params: map[string]string{"level": "auto"}}
	if target != "" {
		step.Params["target"] = target
	}
	return append(slices.Clip(ts), step.String()), nil
}

func parseCompress(p *Params) (Step, error) {
	c := &compress{}
	v := p.String("level")
	c.target = p.Enum("target")
	if v == "auto" {
		c.auto = true
		return c, p.Err()
	}
	if n, err := strconv.Atoi(v); v != "" && err != nil {
		p.Fail("Invalid value for level: %q (0 to 100, or auto)", v)
	} else if n < 0 || n > 100 {
		p.Fail("level must be between 0 and 100, or auto")
	} else {
		c.level = n
	}
	if c.target != "" {
		p.Fail("target applies only with level=auto")
	}
	return c, p.Err()
}

func (c *compress) Apply(s *State) error {
	if c.auto {
		s.Output.Auto, s.Output.AutoTarget, s.Output.LevelSet = true, c.target, false
		return nil
	}
	s.Output.Level, s.Output.LevelSet, s.Output.Auto = c.level, true, false
	return nil
}

func (*compress) streams() {}

var (
	_ Step     = (*compress)(nil)
	_ streamer = (*compress)(nil)
)
