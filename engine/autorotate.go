package engine

// autoRotate turns the image upright according to its EXIF orientation (1-8)
// and resets the orientation to 1; a no-op without one.
type autoRotate struct{}

func init() {
	register("autoRotate", describe(parseAutoRotate, "Turns the image upright according to its EXIF orientation."))
}

func parseAutoRotate(p *Params) (Step, error) { return autoRotate{}, p.Err() }

func (autoRotate) Apply(s *State) error {
	if s.Image.Orientation() <= 1 {
		return nil
	}
	return s.Image.AutoRotate()
}

var _ Step = autoRotate{}
