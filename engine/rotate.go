package engine

import (
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// rotate turns the image angle degrees clockwise (negative: counter-
// clockwise). Multiples of 90 are exact; other angles grow the canvas to the
// rotated bounding box, filled with bg (`none` for transparent).
type rotate struct {
	angle int // normalised to 0..359
	bg    Color
}

func init() {
	register("rotate", describe(parseRotate, "Rotates the image clockwise; angles other than multiples of 90 grow the canvas.",
		numParam("angle", -1e9, 1e9, "Angle in degrees; negative turns counter-clockwise.").required(),
		colorParam("bg", "Colour of the uncovered corners, or none for transparent.").def("000").orNone(),
	))
}

func parseRotate(p *Params) (Step, error) {
	r := &rotate{}
	// The angle is cast to an integer: 12.7 is 12.
	a := p.Float("angle")
	r.angle = ((int(math.Trunc(a)) % 360) + 360) % 360
	r.bg = p.Color("bg")
	return r, p.Err()
}

func (r *rotate) Apply(s *State) error {
	switch r.angle {
	case 0:
		return nil
	case 90:
		return s.Image.Rotate(vips.Angle90)
	case 180:
		return s.Image.Rotate(vips.Angle180)
	case 270:
		return s.Image.Rotate(vips.Angle270)
	}
	if err := toSRGB(s.Image); err != nil {
		return err
	}
	if r.bg.A < 255 && !s.Image.HasAlpha() {
		if err := s.Image.AddAlpha(); err != nil {
			return err
		}
	}
	return s.Image.Similarity(1, float64(r.angle), rgba(r.bg), 0, 0, 0, 0)
}

var _ Step = (*rotate)(nil)
