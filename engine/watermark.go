package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// watermark composites another image of the same user over this one:
// optionally resized, placed by position plus x/y,
// with its alpha scaled by opacity, clipped to the image.
type watermark struct {
	img           string
	width, height int // 0: keep the watermark's own size
	position      string
	x, y          int
	opacity       int
}

func init() {
	register("watermark", describe(parseWatermark, "Draws another image of the same user over this one.",
		stringParam("img", "Image identifier of the watermark; default the configured one."),
		intParam("width", 1, maxSide, "Width of the watermark in pixels."),
		intParam("height", 1, maxSide, "Height of the watermark in pixels."),
		enumParam("position", []string{"top-left", "top-right", "bottom-left", "bottom-right", "top", "bottom", "left", "right", "center"}, "Where to place it.").def("top-left"),
		intParam("x", -maxSide, maxSide, "Horizontal offset from the position.").def(0),
		intParam("y", -maxSide, maxSide, "Vertical offset from the position.").def(0),
		intParam("opacity", 0, 100, "Opacity in percent.").def(100),
	))
}

func parseWatermark(p *Params) (Step, error) {
	w := watermark{
		img:      p.String("img"),
		width:    p.Int("width"),
		height:   p.Int("height"),
		position: p.Enum("position"),
		x:        p.Int("x"),
		y:        p.Int("y"),
		// An explicit 0 is fully transparent, unlike Imbo's.
		opacity: p.Int("opacity"),
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w watermark) Apply(s *State) error {
	id := w.img
	if id == "" && s.engine != nil {
		id = s.engine.cfg.DefaultWatermark
	}
	if id == "" {
		return invalidf("watermark: You must specify an image identifier to use for the watermark")
	}
	if s.Env.LoadImage == nil {
		return invalidf("watermark: Watermark image not found")
	}
	data, err := s.Env.LoadImage(s.Ctx, id)
	if errors.Is(err, fs.ErrNotExist) {
		return invalidf("watermark: Watermark image not found")
	}
	if err != nil {
		return fmt.Errorf("watermark: load %s: %w", id, err)
	}
	mark, err := s.engine.loadChecked(data, vips.NewImportParams())
	var ee *Error
	if errors.As(err, &ee) {
		return err
	}
	if err != nil {
		return fmt.Errorf("watermark: decode %s: %w", id, err)
	}
	defer mark.Close()
	if err := w.prepare(mark); err != nil {
		return fmt.Errorf("watermark: %w", err)
	}
	if err := toSRGB8(s.Image); err != nil {
		return err
	}
	x, y := w.place(s.Image.Width(), s.Image.Height(), mark.Width(), mark.Height())
	bands := s.Image.Bands()
	if err := s.Image.Composite(mark, vips.BlendModeOver, x, y); err != nil {
		return fmt.Errorf("watermark: %w", err)
	}
	if s.Image.Bands() > bands { // an opaque base stays opaque
		if err := s.Image.ExtractBand(0, bands); err != nil {
			return fmt.Errorf("watermark: %w", err)
		}
	}
	return castTo(s.Image, vips.BandFormatUchar)
}

// prepare resizes the watermark, makes it 8-bit sRGB with alpha and applies
// the opacity.
func (w watermark) prepare(mark *vips.ImageRef) error {
	mw, mh := mark.Width(), mark.Height()
	tw, th := w.width, w.height
	switch {
	case tw > 0 && th == 0:
		th = max(int(float64(mh)*float64(tw)/float64(mw)), 1)
	case th > 0 && tw == 0:
		tw = max(int(float64(mw)*float64(th)/float64(mh)), 1)
	}
	if tw > 0 {
		if err := ResizeExact(mark, tw, th); err != nil {
			return err
		}
	}
	if err := toSRGB8(mark); err != nil {
		return err
	}
	if !mark.HasAlpha() {
		if err := mark.AddAlpha(); err != nil {
			return err
		}
	}
	if w.opacity < 100 {
		k := float64(w.opacity) / 100
		if err := mark.Linear([]float64{1, 1, 1, k}, []float64{0, 0, 0, 0.5}); err != nil {
			return err
		}
		return mark.Cast(vips.BandFormatUchar)
	}
	return nil
}

// place returns the watermark's top-left corner per Imbo's table (the
// position's anchor, placement.go, plus x and y): halves are computed in
// floating point, x and y added, and only then truncated, as PHP's (int)
// does (anchor.offset truncates the half first: the two can differ by one
// pixel when the space left is odd and x or y is not zero).
func (w watermark) place(iw, ih, ww, wh int) (int, int) {
	a, _ := positionAnchor(w.position)
	px := float64(a.h*(iw-ww))/2 + float64(w.x)
	py := float64(a.v*(ih-wh))/2 + float64(w.y)
	return int(math.Trunc(px)), int(math.Trunc(py))
}

var _ Step = watermark{}
