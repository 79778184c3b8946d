package engine

import (
	"image"
	"math"
)

// smartSize crops around a point of interest (the `poi` parameter or the
// first entry of the metadata `poi` list) and resizes to exactly
// width x height; without a POI it fills and keeps the most salient area
// (libvips' attention smartcrop; Imbo crops centred). It sets the
// POIs-Used response header.
type smartSize struct {
	w, h   int
	poi    *POI // from the parameter, nil when not given
	growth float64
	thresh float64
}

// closeness maps the crop parameter to (grow factor, threshold).
var closeness = map[string][2]float64{
	"close":  {1, 0.3},
	"medium": {1.25, 0.5},
	"wide":   {1.6, 0.66},
	"full":   {2, 1},
}

func init() {
	register("smartSize", describe(parseSmartSize, "Crops and scales to a size around the point of interest.",
		intParam("width", 1, maxSide, "Width in pixels.").required(),
		intParam("height", 1, maxSide, "Height in pixels.").required(),
		stringParam("poi", "Point of interest as x,y; default the image's metadata poi, else the most salient area (attention)."),
		enumParam("crop", []string{"close", "medium", "wide", "full"}, "How tightly to crop around the point.").def("medium"),
		dprParam(),
	))
}

func parseSmartSize(p *Params) (Step, error) {
	p.Has("dpr") // applied before parsing (hints.go)
	t := &smartSize{}
	if !p.Has("width") || !p.Has("height") {
		p.Fail("Both width and height needs to be specified")
	}
	t.w = p.Int("width")
	t.h = p.Int("height")
	if p.Has("poi") {
		poi, ok := parsePOIParam(p.String("poi"))
		if !ok {
			p.Fail("Invalid POI format, expected format `<x>,<y>`")
		}
		t.poi = &poi
	}
	c, ok := closeness[p.String("crop")]
	if !ok {
		p.Fail("Invalid crop value. Valid values are: close,medium,wide,full")
	}
	t.growth, t.thresh = c[0], c[1]
	return t, p.Err()
}

// point returns the POI: the parameter, else the centre of the metadata's
// first poi entry (parsePOI); ok is false when neither is there or that
// entry is malformed.
func (t *smartSize) point(env Env) (float64, float64, bool) {
	if t.poi != nil {
		x, y := t.poi.Centre()
		return x, y, true
	}
	list, _ := env.Metadata["poi"].([]any)
	if len(list) == 0 {
		return 0, 0, false
	}
	p, ok := parsePOI(list[0])
	if !ok {
		return 0, 0, false
	}
	x, y := p.Centre()
	return x, y, true
}

// smartCropRect returns the area of a W x H image cropped around (fx, fy)
// before the final resize to w x h, as Imbo's smartSize does.
func smartCropRect(W, H, w, h int, fx, fy, growth, thresh float64) image.Rectangle {
	var cw, ch int
	if W*h >= w*H { // source ratio >= target ratio
		m := math.Max(math.Min(float64(H), float64(h)*growth), float64(H)*thresh)
		cw = int(math.Ceil(float64(w) * m / float64(h)))
		ch = cw * h / w
	} else {
		m := math.Max(math.Min(float64(W), float64(w)*growth), float64(W)*thresh)
		ch = int(math.Ceil(m * float64(h) / float64(w)))
		cw = ch * w / h
	}
	cw, ch = min(max(cw, 1), W), min(max(ch, 1), H)
	top := int(fy - math.Floor(float64(ch)/2))
	left := int(fx - math.Floor(float64(cw)/2))
	left = max(min(left, W-cw), 0)
	top = max(min(top, H-ch), 0)
	return image.Rect(left, top, left+cw, top+ch)
}

// noPOI returns the size maxSize gives before the centred crop.
func (t *smartSize) noPOI(W, H int) (int, int) {
	m := &maxSize{h: t.h}
	if t.w*H > t.h*W {
		m = &maxSize{w: t.w}
	}
	w, h, _ := m.target(W, H)
	return w, h
}

func (t *smartSize) loadHint(s *State) (int, int) {
	W, H := s.OrigWidth, s.OrigHeight
	var w, h int
	if fx, fy, ok := t.point(s.Env); ok {
		r := smartCropRect(W, H, t.w, t.h, fx, fy, t.growth, t.thresh)
		w, h = ceilDiv(t.w*W, r.Dx()), ceilDiv(t.h*H, r.Dy())
	} else {
		w, h = t.noPOI(W, H)
	}
	if w >= W || h >= H {
		return 0, 0
	}
	return w, h
}

func (t *smartSize) Apply(s *State) error {
	W, H := s.Size()
	fx, fy, ok := t.point(s.Env)
	if !ok {
		s.Headers["POIs-Used"] = "0"
		mw, mh := t.noPOI(W, H)
		if _, _, err := cropRect("smartSize", mw, mh, t.w, t.h, 0, 0, "center"); err != nil {
			return err
		}
		if err := s.resizeTo(mw, mh); err != nil {
			return err
		}
		x, y, err := gravity("attention").place(s, t.w, t.h)
		if err != nil {
			return err
		}
		return s.cropTo(x, y, t.w, t.h)
	}
	s.Headers["POIs-Used"] = "1"
	r := smartCropRect(W, H, t.w, t.h, fx, fy, t.growth, t.thresh)
	if err := s.cropTo(r.Min.X, r.Min.Y, r.Dx(), r.Dy()); err != nil {
		return err
	}
	return s.resizeTo(t.w, t.h)
}

func (*smartSize) streams() {}

var (
	_ Step       = (*smartSize)(nil)
	_ loadHinter = (*smartSize)(nil)
	_ streamer   = (*smartSize)(nil)
)

func (smartSize) readsMetadata() {}
