package engine

// crop extracts width x height at (x, y), or centred on one or both axes with
// mode center, center-x or center-y, or where gravity says.
type crop struct {
	w, h, x, y int
	mode       string
	gravity    gravity // "" when not given
}

func init() {
	register("crop", describe(parseCrop, "Cuts out an area of the image.",
		intParam("width", 1, maxSide, "Width of the area in pixels.").required(),
		intParam("height", 1, maxSide, "Height of the area in pixels.").required(),
		intParam("x", 0, maxSide, "Left edge of the area.").def(0),
		intParam("y", 0, maxSide, "Top edge of the area.").def(0),
		enumParam("mode", []string{"center", "center-x", "center-y"}, "Centre the area on both axes or one, instead of x and y."),
		enumParam("gravity", gravities, gravityDoc+" When given, it places the area and x, y and mode are ignored."),
		dprParam(),
	))
}

func parseCrop(p *Params) (Step, error) {
	p.Has("dpr") // applied before parsing (hints.go)
	c := &crop{}
	c.w = p.Int("width")
	c.h = p.Int("height")
	// Negative offsets would make ImageMagick clip the area silently; they
	// are refused instead (400, as the declared minimum 0 says).
	c.x = p.Int("x")
	c.y = p.Int("y")
	c.mode = p.Enum("mode")
	if p.Has("gravity") {
		c.gravity = parseGravity(p)
	}
	if c.gravity == "faces" {
		return facesCrop{c}, p.Err()
	}
	return c, p.Err()
}

// cropRect returns the offsets of a w x h crop of a W x H image, or the
// reference's out-of-bounds error.
func cropRect(name string, W, H, w, h, x, y int, mode string) (int, int, error) {
	if mode == "center" || mode == "center-x" {
		x = (W - w) / 2 // Go's division truncates toward zero, like (int)
	}
	if mode == "center" || mode == "center-y" {
		y = (H - h) / 2
	}
	if x+w > W {
		return 0, 0, invalidf("%s: Crop area is out of bounds (`x` + `width` > image width)", name)
	}
	if y+h > H {
		return 0, 0, invalidf("%s: Crop area is out of bounds (`y` + `height` > image height)", name)
	}
	return x, y, nil
}

func (c *crop) Apply(s *State) error {
	W, H := s.Size()
	var x, y int
	var err error
	if c.gravity == "" {
		x, y, err = cropRect("crop", W, H, c.w, c.h, c.x, c.y, c.mode)
	} else if _, _, err = cropRect("crop", W, H, c.w, c.h, 0, 0, ""); err == nil { // the bounds check
		x, y, err = c.gravity.place(s, c.w, c.h)
	}
	if err != nil {
		return err
	}
	if c.w == W && c.h == H {
		return nil
	}
	return s.cropTo(x, y, c.w, c.h)
}

func (*crop) streams() {}

var (
	_ Step     = (*crop)(nil)
	_ streamer = (*crop)(nil)
)
