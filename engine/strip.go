package engine

// strip removes metadata (EXIF, XMP, IPTC, comments and the ICC profile) at
// encode time, after applying the EXIF orientation to the pixels. It is the
// default for every output (metadata.go); with Config.Output.KeepMetadata it is how
// one request asks for a clean image.
type strip struct{}

func init() {
	register("strip", describe(parseStrip, "Removes metadata (EXIF, ICC profile, comments) from the output."))
}

func parseStrip(p *Params) (Step, error) { return strip{}, p.Err() }

func (strip) Apply(s *State) error {
	s.Output.Strip = true
	// A profile embedded by an earlier icc step goes too, as documented.
	s.Output.KeepProfile = false
	return nil
}

func (strip) streams() {}

var (
	_ Step     = strip{}
	_ streamer = strip{}
)
