package engine

import (
	"context"
	"io"
	"math"
	"strconv"
)

// frame picks the picture a video's chain starts from: the frame at a
// time (`time`, seconds) or a fraction of the duration (`at`, 0 to 1).
// By default the keyframe at or before that moment is decoded, which
// reads a fraction of the video; exact=1 decodes up to the moment itself.
// It is only a chain's first step, and only on a video: the poster is the
// picture of every other chain.
type frame struct {
	time, at float64
	hasAt    bool
	exact    bool
}

func init() {
	register("frame", describe(parseFrame, "A video's frame at a time or a fraction of its duration, as the picture the rest of the chain works on (first step only; videos only).",
		numParam("time", 0, 86400, "Seconds from the start (default 0); past the end, the last second.").def(0),
		numParam("at", 0, 1, "Fraction of the duration, 0 to 1; wins over time."),
		intParam("exact", 0, 1, "1: the exact frame; 0: the keyframe at or before it, much faster.").def(0)))
}

func parseFrame(p *Params) (Step, error) {
	f := &frame{time: p.Float("time"), at: p.Float("at"), hasAt: p.Has("at"), exact: p.Int("exact") == 1}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// Apply is never called on a video's chain (ProcessVideo runs the step);
// on a still image there is no video to take a frame of.
func (*frame) Apply(*State) error {
	return invalidf("frame: the image is not a video (frame is for videos, as a chain's first step)")
}

// videoSource is a chain's first step when it is a video's (frame,
// sprite, preview): picture decodes what the rest of the chain works on.
type videoSource interface {
	Step
	picture(ctx context.Context, e *Engine, vf *videoFile, f format, info Info) ([]byte, map[string]string, error)
}

// second is the moment the frame is taken at, within the video.
func (st *frame) second(info Info) float64 {
	d, fps := info.Video.Duration, info.Video.FPS
	t := st.time
	if st.hasAt {
		t = st.at * d
	}
	last := math.Max(d-1/math.Max(fps, 1), 0)
	return math.Min(t, last)
}

func (st *frame) picture(ctx context.Context, e *Engine, vf *videoFile, f format, info Info) ([]byte, map[string]string, error) {
	return st.scaled(ctx, e, vf, f, info, 1)
}

// scaled is picture at 1/shrink of the video's size (shrink 2, 4 or 8:
// what a JPEG's decoder would give the rest of the chain; 1: full size).
func (st *frame) scaled(ctx context.Context, e *Engine, vf *videoFile, f format, info Info, shrink int) ([]byte, map[string]string, error) {
	t := st.second(info)
	width := 0
	if shrink > 1 {
		width = ceilDiv(info.Width, shrink)
	}
	out, err := e.extractFrame(ctx, vf, f, info, t, st.exact, width)
	if err != nil {
		return nil, nil, err
	}
	return out, map[string]string{"Frame-Time": strconv.FormatFloat(t, 'f', 3, 64)}, nil
}

// ReadsVideo reports whether the chain starts with a step that decodes the
// video itself (frame, sprite, preview): such a chain renders with ProcessVideo, every
// other chain of a video from its poster.
func (c Chain) ReadsVideo() bool {
	_, ok := c.videoSource()
	return ok
}

func (c Chain) videoSource() (videoSource, bool) {
	if len(c.steps) == 0 {
		return nil, false
	}
	v, ok := c.steps[0].(videoSource)
	return v, ok
}

// checkVideoSteps refuses a video step anywhere but first.
func (c Chain) checkVideoSteps() error {
	for i, st := range c.steps {
		if _, ok := st.(videoSource); ok && i > 0 {
			return invalidf("%s must be the first transformation of a chain (it picks the video's frame the others work on)", c.specs[i].Name)
		}
	}
	return nil
}

// ProcessVideo renders a chain that starts with a video step (ReadsVideo)
// on the video open streams; req.Source is the video's Info as stored,
// Video included. It waits for a pipeline slot first, streams the video
// into a private file (never whole in memory), has ffmpeg decode the picture, and renders the rest
// of the chain on it (a JPEG unless req.Format says otherwise).
func (e *Engine) ProcessVideo(ctx context.Context, open func(context.Context) (io.ReadCloser, error), req Request) (*Result, error) {
	src, ok := req.Chain.videoSource()
	f, known := videoFormat(req.Source.Ext)
	switch {
	case !ok:
		return nil, invalidf("the chain does not start with a video step")
	case !known || req.Source.Video == nil:
		return nil, invalidf("%s: the image is not a video", req.Chain.specs[0].Name)
	case e.video == nil:
		return nil, &Error{Kind: KindUnsupported, Msg: "Video is off (uploads.video): only the poster of a video is rendered"}
	}
	ctx, end, err := e.admit(ctx, req.Chain)
	if err != nil {
		return nil, err
	}
	defer end()
	r, err := open(ctx)
	if err != nil {
		return nil, err
	}
	vf, err := writeVideoFile(r)
	r.Close()
	if err != nil {
		return nil, err
	}
	defer vf.remove()
	rest := Chain{specs: req.Chain.specs[1:], steps: req.Chain.steps[1:], hints: req.Chain.hints}
	var variation *VariationSource
	var pic []byte
	var headers map[string]string
	if fr, ok := src.(*frame); ok {
		// A reducing chain gets the frame scaled by ffmpeg, as a JPEG's
		// decoder would shrink it on load, and renders it as a stored
		// variation of the full frame: converting and passing the full
		// frame costs more than its decode.
		shrink := max(1, rest.VariationScale(req.Source.Width, req.Source.Height, "jpg", req.Env))
		if shrink > 1 {
			variation = &VariationSource{OrigWidth: req.Source.Width, OrigHeight: req.Source.Height, OrigExt: "tif"}
		}
		pic, headers, err = fr.scaled(ctx, e, vf, f, req.Source, shrink)
	} else {
		pic, headers, err = src.picture(ctx, e, vf, f, req.Source)
	}
	if err != nil {
		return nil, err
	}
	req.Chain, req.Source, req.Variation = rest, Info{}, variation
	if _, ok := mimeOf[req.Format]; !ok {
		req.Format = "jpg"
		if _, anim := src.(*preview); anim {
			req.Format = "webp"
		}
	}
	res, err := e.renderPicture(ctx, pic, req)
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		res.Headers[k] = v
	}
	return res, nil
}

// renderPicture renders req on a picture a video step made: an animation
// (preview) through the animation path, a still through the chain.
func (e *Engine) renderPicture(ctx context.Context, pic []byte, req Request) (*Result, error) {
	res, err := e.render(ctx, pic, req, nil)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return res, err
}

// videoFormat is the format of a stored video's extension.
func videoFormat(ext string) (format, bool) {
	mime, ok := VideoTypes[ext]
	return format{mime, ext}, ok
}
