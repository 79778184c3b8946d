package engine

// progressive asks for progressive JPEG and interlaced PNG output.
type progressive struct{}

func init() {
	register("progressive", describe(parseProgressive, "Encodes a progressive JPEG or an interlaced PNG or GIF."))
}

func parseProgressive(p *Params) (Step, error) { return progressive{}, p.Err() }

func (progressive) Apply(s *State) error {
	s.Output.Progressive = true
	return nil
}

func (progressive) streams() {}

var (
	_ Step     = progressive{}
	_ streamer = progressive{}
)
