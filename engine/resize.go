package engine

// resize scales to width x height; with one side given the other follows the
// aspect ratio, rounded up; with both, the aspect ratio is not kept.
type resize struct {
	w, h int // 0 = not given
}

func init() {
	register("resize", describe(parseResize, "Scales the image; with one side given, the other keeps the aspect ratio.",
		intParam("width", 1, maxSide, "Width in pixels; give width, height or both. "+autoWidthDoc),
		intParam("height", 1, maxSide, "Height in pixels; give width, height or both."),
		dprParam(),
	))
}

func parseResize(p *Params) (Step, error) {
	p.Has("dpr") // applied before parsing (hints.go)
	r := &resize{w: p.Int("width"), h: p.Int("height")}
	if r.w == 0 && r.h == 0 && !p.Has("width") && !p.Has("height") {
		p.Fail("Missing both width and height. You need to specify at least one of them")
	}
	return r, p.Err()
}

// target returns the output size for a W x H image.
func (r *resize) target(W, H int) (int, int) {
	w, h := r.w, r.h
	switch {
	case h == 0:
		h = max(ceilDiv(H*w, W), 1)
	case w == 0:
		w = max(ceilDiv(W*h, H), 1)
	}
	return w, h
}

func (r *resize) loadHint(s *State) (int, int) {
	w, h := r.target(s.OrigWidth, s.OrigHeight)
	if w >= s.OrigWidth || h >= s.OrigHeight {
		return 0, 0
	}
	return w, h
}

func (r *resize) Apply(s *State) error { return s.resizeTo(r.target(s.Size())) }

func (*resize) streams() {}

var (
	_ Step       = (*resize)(nil)
	_ loadHinter = (*resize)(nil)
	_ streamer   = (*resize)(nil)
)
