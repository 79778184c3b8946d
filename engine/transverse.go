package engine

import "github.com/davidbyttow/govips/v2/vips"

// transverse mirrors the image along its top-right to bottom-left diagonal:
// (x, y) becomes (H-1-y, W-1-x).
type transverse struct{}

func init() {
	register("transverse", describe(parseTransverse, "Mirrors the image along its top-right to bottom-left diagonal."))
}

func parseTransverse(p *Params) (Step, error) { return transverse{}, p.Err() }

// Apply rotates 90 degrees clockwise, then mirrors top to bottom.
func (transverse) Apply(s *State) error {
	if err := s.Image.Rotate(vips.Angle90); err != nil {
		return err
	}
	return s.Image.Flip(vips.DirectionVertical)
}

var _ Step = transverse{}
