package engine

import "github.com/davidbyttow/govips/v2/vips"

// border draws a frame of colour color: outbound (the default) adds width
// pixels left and right and height pixels top and bottom; inline paints them
// over the image's edge and keeps its size.
type border struct {
	w, h   int
	inline bool
	color  Color
}

func init() {
	register("border", describe(parseBorder, "Draws a border around the image, outside it or over its edge.",
		colorParam("color", "Border colour.").def("000"),
		intParam("width", 0, maxSide, "Width of the left and right borders in pixels.").def(1),
		intParam("height", 0, maxSide, "Height of the top and bottom borders in pixels.").def(1),
		enumParam("mode", []string{"outbound", "inline"}, "outbound grows the image; inline draws over its edge.").def("outbound"),
	))
}

func parseBorder(p *Params) (Step, error) {
	b := &border{
		color:  p.Color("color"),
		w:      p.Int("width"),
		h:      p.Int("height"),
		inline: p.Enum("mode") == "inline",
	}
	return b, p.Err()
}

func (b *border) Apply(s *State) error {
	if b.w == 0 && b.h == 0 {
		return nil
	}
	W, H := s.Size()
	if err := toSRGB(s.Image); err != nil {
		return err
	}
	// The frame is opaque; an alpha image keeps its own transparency inside.
	c := rgba(b.color)
	if !b.inline {
		return s.Image.EmbedBackgroundRGBA(b.w, b.h, W+2*b.w, H+2*b.h, c)
	}
	if 2*b.w >= W || 2*b.h >= H { // the frame covers everything
		return fill(s, c)
	}
	if err := s.Image.ExtractArea(b.w, b.h, W-2*b.w, H-2*b.h); err != nil {
		return err
	}
	return s.Image.EmbedBackgroundRGBA(b.w, b.h, W, H, c)
}

// fill paints the whole image with c (opaque).
func fill(s *State, c *vips.ColorRGBA) error {
	a := []float64{0, 0, 0}
	v := []float64{float64(c.R), float64(c.G), float64(c.B)}
	if s.Image.HasAlpha() {
		a, v = append(a, 0), append(v, 255)
	}
	if err := s.Image.Linear(a, v); err != nil {
		return err
	}
	return s.Image.Cast(vips.BandFormatUchar)
}

func (*border) streams() {}

var (
	_ Step     = (*border)(nil)
	_ streamer = (*border)(nil)
)
