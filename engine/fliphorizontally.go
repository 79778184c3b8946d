package engine

import "github.com/davidbyttow/govips/v2/vips"

// flipHorizontally mirrors the image left to right.
type flipHorizontally struct{}

func init() {
	register("flipHorizontally", describe(parseFlipHorizontally, "Mirrors the image left to right."))
}

func parseFlipHorizontally(p *Params) (Step, error) { return flipHorizontally{}, p.Err() }

func (flipHorizontally) Apply(s *State) error { return s.Image.Flip(vips.DirectionHorizontal) }

func (flipHorizontally) streams() {}

var (
	_ Step     = flipHorizontally{}
	_ streamer = flipHorizontally{}
)
