package engine

import "github.com/davidbyttow/govips/v2/vips"

// canvas places the image on a width x height canvas of colour bg, cropping
// it first where it is larger than the canvas; transparency becomes bg. With
// bg=none (or transparent) the canvas is transparent and the image keeps its
// alpha, for PNG, WebP and GIF output; JPEG output flattens it onto white,
// as it does every transparent image.
type canvas struct {
	w, h, x, y int // w, h: 0 = the image's own
	mode       string
	bg         Color
}

func init() {
	register("canvas", describe(parseCanvas, "Places the image on a canvas of a given size and colour.",
		intParam("width", 1, maxSide, "Canvas width in pixels; default the image's width."),
		intParam("height", 1, maxSide, "Canvas height in pixels; default the image's height."),
		enumParam("mode", []string{"free", "center", "center-x", "center-y"}, "How the image is placed: at x, y or centred.").def("free"),
		intParam("x", -maxSide, maxSide, "Left offset of the image in free mode.").def(0),
		intParam("y", -maxSide, maxSide, "Top offset of the image in free mode.").def(0),
		colorParam("bg", "Canvas colour, or none for transparent.").def("ffffff").orNone(),
	))
}

func parseCanvas(p *Params) (Step, error) {
	c := &canvas{
		w:    p.Int("width"),
		h:    p.Int("height"),
		mode: p.Enum("mode"),
		x:    p.Int("x"),
		y:    p.Int("y"),
		bg:   p.Color("bg"),
	}
	return c, p.Err()
}

// layout returns the crop applied first (size and offset) and where the
// cropped image lands on a cw x ch canvas.
func (c *canvas) layout(W, H int) (cw, ch, cropX, cropY, w, h, x, y int) {
	cw, ch = W, H
	if c.w > 0 {
		cw = c.w
	}
	if c.h > 0 {
		ch = c.h
	}
	centreX := c.mode == "center" || c.mode == "center-x"
	centreY := c.mode == "center" || c.mode == "center-y"
	w, h = min(W, cw), min(H, ch)
	if centreX && W > cw {
		cropX = (W - cw) / 2
	}
	if centreY && H > ch {
		cropY = (H - ch) / 2
	}
	x, y = c.x, c.y
	if centreX {
		x = (cw - w) / 2
	}
	if centreY {
		y = (ch - h) / 2
	}
	return
}

func (c *canvas) Apply(s *State) error {
	W, H := s.Size()
	cw, ch, cropX, cropY, w, h, x, y := c.layout(W, H)
	if w != W || h != H {
		if err := s.Image.ExtractArea(cropX, cropY, w, h); err != nil {
			return err
		}
	}
	if err := toSRGB(s.Image); err != nil {
		return err
	}
	if c.bg.A == 0 {
		if !s.Image.HasAlpha() {
			if err := s.Image.AddAlpha(); err != nil {
				return err
			}
		}
		return s.Image.EmbedBackgroundRGBA(x, y, cw, ch, &vips.ColorRGBA{})
	}
	bg := c.bg
	if s.Image.HasAlpha() {
		if err := s.Image.Flatten(&vips.Color{R: bg.R, G: bg.G, B: bg.B}); err != nil {
			return err
		}
	}
	return s.Image.EmbedBackgroundRGBA(x, y, cw, ch, rgba(bg))
}

func (*canvas) streams() {}

var (
	_ Step     = (*canvas)(nil)
	_ streamer = (*canvas)(nil)
)
