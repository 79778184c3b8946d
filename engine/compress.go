package engine

// compress sets the output compression level (0-100): the JPEG, WebP and
// AVIF quality; for PNG the tens digit is the zlib level and the ones digit
// the filter. It has no effect on GIF.
type compress struct{ level int }

func init() {
	register("compress", describe(parseCompress, "Sets the output quality.",
		intParam("level", 0, 100, "Quality, 0 (smallest) to 100 (best).").required(),
	))
}

func parseCompress(p *Params) (Step, error) {
	c := &compress{}
	c.level = p.Int("level")
	return c, p.Err()
}

func (c *compress) Apply(s *State) error {
	s.Output.Level, s.Output.LevelSet = c.level, true
	return nil
}

func (*compress) streams() {}

var (
	_ Step     = (*compress)(nil)
	_ streamer = (*compress)(nil)
)
