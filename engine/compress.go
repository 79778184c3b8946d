package engine

import "strconv"

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
