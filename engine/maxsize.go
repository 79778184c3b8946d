package engine

// maxSize scales the image down to fit width and/or height, keeping the
// aspect ratio (rounded half away from zero); it never enlarges.
type maxSize struct {
	w, h int // 0 = not given
}

func init() {
	register("maxSize", describe(parseMaxSize, "Scales the image down to fit a width and/or height; never enlarges.",
		intParam("width", 1, maxSide, "Largest width in pixels. "+autoWidthDoc),
		intParam("height", 1, maxSide, "Largest height in pixels."),
		dprParam(),
	))
}

func parseMaxSize(p *Params) (Step, error) {
	p.Has("dpr") // applied before parsing (hints.go)
	m := &maxSize{w: p.Int("width"), h: p.Int("height")}
	return m, p.Err()
}

// target returns the output size for a W x H image and whether it differs.
func (m *maxSize) target(W, H int) (int, int, bool) {
	if m.w == 0 && m.h == 0 {
		return W, H, false
	}
	w, h := m.w, m.h
	if w == 0 {
		w = W
	}
	if h == 0 {
		h = H
	}
	if w*H > h*W { // w/h > W/H
		w = roundMin1(float64(h) * float64(W) / float64(H))
	} else {
		h = roundMin1(float64(w) * float64(H) / float64(W))
	}
	if W <= w && H <= h {
		return W, H, false
	}
	return w, h, true
}

func (m *maxSize) loadHint(s *State) (int, int) {
	if w, h, ok := m.target(s.OrigWidth, s.OrigHeight); ok {
		return w, h
	}
	return 0, 0
}

func (m *maxSize) Apply(s *State) error {
	w, h, _ := m.target(s.Size())
	return s.resizeTo(w, h)
}

func (*maxSize) streams() {}

var (
	_ Step       = (*maxSize)(nil)
	_ loadHinter = (*maxSize)(nil)
	_ streamer   = (*maxSize)(nil)
)
