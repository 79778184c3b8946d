package engine

import "github.com/davidbyttow/govips/v2/vips"

// flipVertically mirrors the image top to bottom.
type flipVertically struct{}

func init() {
	register("flipVertically", describe(parseFlipVertically, "Mirrors the image top to bottom."))
}

func parseFlipVertically(p *Params) (Step, error) { return flipVertically{}, p.Err() }

func (flipVertically) Apply(s *State) error { return s.Image.Flip(vips.DirectionVertical) }

var _ Step = flipVertically{}
