package engine

// strip removes metadata (EXIF, XMP, IPTC, comments) now and at encode time.
type strip struct{}

func init() {
	register("strip", describe(parseStrip, "Removes metadata (EXIF, ICC profile, comments) from the output."))
}

func parseStrip(p *Params) (Step, error) { return strip{}, p.Err() }

func (strip) Apply(s *State) error {
	s.Output.Strip = true
	return s.Image.RemoveMetadata()
}

func (strip) streams() {}

var (
	_ Step     = strip{}
	_ streamer = strip{}
)
