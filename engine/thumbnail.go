package engine

// thumbnail fits the image into width x height: outbound (the default) fills
// the box and crops the overflow where gravity says (centred by default), so
// the output is always exactly w x h; inset fits inside it.
type thumbnail struct {
	w, h    int
	inset   bool
	gravity gravity
}

func init() {
	register("thumbnail", describe(parseThumbnail, "Makes a small version of the image.",
		intParam("width", 1, maxSide, "Width in pixels.").def(50),
		intParam("height", 1, maxSide, "Height in pixels.").def(50),
		enumParam("fit", []string{"outbound", "inset"}, "outbound fills and crops; inset fits inside.").def("outbound"),
		enumParam("gravity", gravities, gravityDoc+" Only with fit=outbound.").def("centre"),
		dprParam(),
	))
}

func parseThumbnail(p *Params) (Step, error) {
	p.Has("dpr") // applied before parsing (hints.go)
	t := &thumbnail{
		w:     p.Int("width"),
		h:     p.Int("height"),
		inset: p.Enum("fit") == "inset",
	}
	t.gravity = parseGravity(p)
	if t.gravity == "faces" {
		return facesThumbnail{t}, p.Err()
	}
	return t, p.Err()
}

// resized returns the size the image is resized to before any crop.
func (t *thumbnail) resized(W, H int) (int, int) {
	w, h := t.w, t.h
	wH, hW := w*H, h*W // rx = w/W vs ry = h/H, compared without floats
	switch {
	case wH == hW:
		return w, h
	case (wH > hW) != t.inset: // outbound: the larger ratio; inset: the smaller
		return w, roundMin1(float64(w) * float64(H) / float64(W))
	default:
		return roundMin1(float64(h) * float64(W) / float64(H)), h
	}
}

func (t *thumbnail) loadHint(s *State) (int, int) {
	w, h := t.resized(s.OrigWidth, s.OrigHeight)
	if w >= s.OrigWidth || h >= s.OrigHeight {
		return 0, 0
	}
	return w, h
}

func (t *thumbnail) Apply(s *State) error {
	W, H := s.Size()
	if !t.inset && W == t.w && H == t.h {
		return s.resizeTo(W, H)
	}
	nw, nh := t.resized(W, H)
	if err := s.resizeTo(nw, nh); err != nil {
		return err
	}
	if t.inset || (nw == t.w && nh == t.h) {
		return nil
	}
	x, y, err := t.gravity.place(s, t.w, t.h)
	if err != nil {
		return err
	}
	return s.cropTo(x, y, t.w, t.h)
}

func (*thumbnail) streams() {}

var (
	_ Step       = (*thumbnail)(nil)
	_ loadHinter = (*thumbnail)(nil)
	_ streamer   = (*thumbnail)(nil)
)
