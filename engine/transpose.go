package engine

import "github.com/davidbyttow/govips/v2/vips"

// transpose mirrors the image along its top-left to bottom-right diagonal:
// (x, y) becomes (y, x).
type transpose struct{}

func init() {
	register("transpose", describe(parseTranspose, "Mirrors the image along its top-left to bottom-right diagonal."))
}

func parseTranspose(p *Params) (Step, error) { return transpose{}, p.Err() }

// Apply rotates 90 degrees clockwise, then mirrors left to right.
func (transpose) Apply(s *State) error {
	if err := s.Image.Rotate(vips.Angle90); err != nil {
		return err
	}
	return s.Image.Flip(vips.DirectionHorizontal)
}

var _ Step = transpose{}
