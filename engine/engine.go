package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Info describes an image as read from its header.
type Info struct {
	Mime   string // image/jpeg, image/png, image/gif, image/webp, image/tiff, image/avif, image/heic, image/jxl, image/svg+xml, application/pdf
	Ext    string // jpg, png, gif, webp, tif, avif, heic, jxl, svg, pdf
	Width  int
	Height int
	// Frames is the number of frames of an animation, 1 for a still image.
	Frames int
	// Video is set for a video (video/mp4, video/quicktime, video/webm):
	// Width and Height are its frames' size after the display rotation.
	Video *VideoInfo
}

// Request asks Process for one output.
type Request struct {
	// Chain is the parsed transformation chain (may be empty).
	Chain Chain
	// Format is the output extension; "" keeps the source format.
	Format string
	// Source is the stored image's Info (as returned by Probe at upload).
	Source Info
	// Env gives steps access to metadata and other images of the same user.
	Env Env
	// Variation, when set, says the source bytes are a stored variation of
	// the image (Chain.PickVariation chose it), not the original.
	Variation *VariationSource
	// AutoQuality, when set, asks for the lowest quality meeting the named
	// perceptual target ("" for the configured one), as quality=auto does;
	// a compress step in the chain wins.
	AutoQuality *string
	// Qualities, when set, keeps this image's auto-quality answers: a
	// render with auto quality starts from the stored ones (one encode when
	// one fits) and stores those its search finds (qualitystore.go).
	Qualities QualityStore
	// Formats, when it names two or more auto-quality formats (the ones
	// the client's Accept allowed), asks for the smallest of them that
	// meets the auto-quality target for this image instead of Format;
	// only with auto quality on a still image.
	Formats []string
}

// Result is one encoded output.
type Result struct {
	Data   []byte
	Mime   string
	Ext    string
	Width  int
	Height int
	// Headers are extra response headers named without the service prefix.
	Headers map[string]string
	// Quality is the auto-quality answer this render found by searching
	// (nil when it used a stored one or no auto quality), which it stored
	// in Request.Qualities.
	Quality *QualityAnswer
	// Searched are the further answers a best-format render searched for
	// (the candidate formats not chosen), also stored.
	Searched []QualityAnswer
}

// Engine runs transformation chains. It is safe for concurrent use.
type Engine struct {
	cfg      Config
	reg      *Registry
	sem      chan struct{}
	waiting  atomic.Int64 // callers blocked in acquire
	observer Observer     // stage timings; nil when off
	// renders counts the renders between takeSlot and slot.end.
	renders sync.WaitGroup
	// closed is closed by Close once it holds every slot.
	closed    chan struct{}
	closeOnce sync.Once
	// video runs ffmpeg and ffprobe; nil unless uploads.video is on.
	video *videoTools
}

// ErrClosed is the error of work asked of an engine after Close.
var ErrClosed = errors.New("engine: closed")

// New validates cfg, applies its defaults and returns an engine holding every
// native transformation. The first call starts libvips for the process.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := startVips(cfg.Logger); err != nil {
		return nil, err
	}
	video, err := findVideoTools(cfg.Uploads.VideoUploads)
	if err != nil {
		return nil, err
	}
	pixels.configure(cfg.PixelPool.MaxIdleMB<<20, cfg.PixelPool.IdleTimeout)
	return &Engine{cfg: cfg, reg: NewRegistry(), sem: make(chan struct{}, cfg.Concurrency), closed: make(chan struct{}), video: video}, nil
}

// Close waits until no render, analysis or variation build runs, by taking
// every pipeline slot (a render whose clients all left included), and keeps
// them: later work fails with ErrClosed. A render that gave its slot up for
// a guest step fails with ErrClosed when it asks for it again, and Close
// waits for it to end too. It returns ctx's error when that has not all
// happened by then. It does not stop libvips, which is shared by the
// process: the caller calls Shutdown once Close has returned nil.
func (e *Engine) Close(ctx context.Context) error {
	select {
	case <-e.closed:
		return nil // closed before
	default:
	}
	for taken := range cap(e.sem) {
		select {
		case e.sem <- struct{}{}:
		case <-ctx.Done():
			for range taken {
				e.release()
			}
			return fmt.Errorf("engine: close: renders still running: %w", ctx.Err())
		}
	}
	e.closeOnce.Do(func() { close(e.closed) })
	ended := make(chan struct{})
	go func() { e.renders.Wait(); close(ended) }()
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("engine: close: renders in guest steps still running: %w", ctx.Err())
	}
}

// Config returns the engine's configuration with defaults applied.
func (e *Engine) Config() Config { return e.cfg }

// Registry returns the engine's transformation registry, for start-up
// registration of custom transformations.
func (e *Engine) Registry() *Registry { return e.reg }

// Process decodes src, runs the chain and encodes the requested format. With
// an empty chain and no format change it returns src untouched. Request.Format,
// when set, wins over a convert step: the extension the client asked for is
// what it gets.
func (e *Engine) Process(ctx context.Context, src []byte, req Request) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	srcInfo := req.Source
	if srcInfo.Ext == "" || srcInfo.Width == 0 {
		info, err := e.Probe(src)
		if err != nil {
			return nil, err
		}
		srcInfo = info
	}
	if req.Format != "" {
		if _, ok := mimeOf[req.Format]; !ok {
			return nil, invalidf("Unsupported output format: %q", req.Format)
		}
	}
	if req.Chain.Len() == 0 && (req.Format == "" || req.Format == srcInfo.Ext) {
		return &Result{Data: src, Mime: srcInfo.Mime, Ext: srcInfo.Ext,
			Width: srcInfo.Width, Height: srcInfo.Height, Headers: map[string]string{}}, nil
	}
	return e.renderStored(ctx, func(context.Context) ([]byte, error) { return src, nil }, req)
}

// ProcessSource is Process with the source bytes read by load, which runs
// only once a pipeline slot is free. Why: a source read before waiting for a
// slot is held by every queued request; at 16 concurrent 12 MP requests that
// was most of the peak memory. req.Source must be set (as stored at upload);
// without it, or with nothing to render, this is load then Process.
func (e *Engine) ProcessSource(ctx context.Context, load func(context.Context) ([]byte, error), req Request) (*Result, error) {
	unchanged := req.Chain.Len() == 0 && (req.Format == "" || req.Format == req.Source.Ext)
	if req.Source.Ext == "" || req.Source.Width == 0 || unchanged {
		src, err := load(ctx)
		if err != nil {
			return nil, err
		}
		return e.Process(ctx, src, req)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, ok := mimeOf[req.Format]; req.Format != "" && !ok {
		return nil, invalidf("Unsupported output format: %q", req.Format)
	}
	return e.renderStored(ctx, load, req)
}

// renderStored renders req on the source load returns with the image's
// stored auto-quality answers: it reads them before waiting for a pipeline
// slot, and stores the answers the render found once the slot is given
// back, so that neither holds a slot while the store answers.
func (e *Engine) renderStored(ctx context.Context, load func(context.Context) ([]byte, error), req Request) (*Result, error) {
	stored := storedQualities(ctx, req)
	res, err := e.renderInSlot(ctx, load, req, stored)
	if err != nil {
		return nil, err
	}
	keepQualities(ctx, req.Qualities, res)
	return res, nil
}

// renderInSlot waits for a pipeline slot (admit), reads the source and
// renders it, and gives the slot back.
func (e *Engine) renderInSlot(ctx context.Context, load func(context.Context) ([]byte, error), req Request, stored []QualityAnswer) (*Result, error) {
	ctx, end, err := e.admit(ctx, req.Chain)
	if err != nil {
		return nil, err
	}
	defer end()
	src, err := load(ctx)
	if err != nil {
		return nil, err
	}
	res, err := e.render(ctx, src, req, stored)
	if err != nil && ctx.Err() != nil {
		// A render stopped by stopOnCancel fails in libvips: say why.
		return nil, ctx.Err()
	}
	return res, err
}

// render decodes src, runs the chain and encodes, with stored the image's
// auto-quality answers; the caller holds a pipeline slot.
func (e *Engine) render(ctx context.Context, src []byte, req Request, stored []QualityAnswer) (*Result, error) {
	anim, err := e.openAnimation(src, req)
	if err != nil {
		return nil, err
	}
	if anim != nil {
		return e.processAnimation(ctx, anim, req)
	}
	start := time.Now()
	_, span := startSpan(ctx, "image.decode", trace.WithAttributes(attribute.Int("vitrine.image.bytes", len(src))))
	d, err := e.decode(src, req.Chain.steps, req.Env, req.Variation)
	if err == nil {
		span.SetAttributes(attribute.String("vitrine.image.format", d.ext), attribute.Int("vitrine.image.width", d.w),
			attribute.Int("vitrine.image.height", d.h))
	}
	endSpan(span, err)
	if err != nil {
		return nil, err
	}
	e.observe("decode", "", start)
	// The source stops giving pixels once ctx is done, so no libvips thread
	// outlives the request by more than a tile.
	defer stopOnCancel(ctx, d.img)()
	s := &State{
		Ctx:        ctx,
		Image:      d.img,
		Env:        req.Env,
		Output:     &Output{Format: d.ext},
		OrigWidth:  d.w,
		OrigHeight: d.h,
		Headers:    map[string]string{},
		engine:     e,
	}
	if d.img.Width() != d.w || d.img.Height() != d.h {
		s.loadW, s.loadH = d.w, d.h
	}
	if d.img.Pages() > 1 {
		// The first frame of an animation (see animation.go): govips
		// treats images that claim several pages specially.
		if err := d.img.SetPages(1); err != nil {
			d.img.Close()
			return nil, err
		}
	}
	// Close whatever image the state holds at the end: steps may replace it.
	defer func() { s.Image.Close() }()

	if err := e.runChain(s, req.Chain, 1); err != nil {
		return nil, err
	}
	if req.Format != "" {
		s.Output.Format = req.Format
	}
	if req.AutoQuality != nil && !s.Output.LevelSet && !s.Output.Auto {
		s.Output.Auto, s.Output.AutoTarget = true, *req.AutoQuality
	}
	s.qualities = stored
	s.formats = req.Formats
	if s.Output.Format == "" {
		s.Output.Format = d.ext
	}
	if _, ok := mimeOf[s.Output.Format]; !ok {
		s.Output.Format = stillFallback(s.Image.HasAlpha())
	}
	if err := e.finishMetadata(s); err != nil {
		return nil, err
	}
	return e.finish(s, s.Image.Width(), s.Image.Height())
}

// runChain applies the chain's steps to s in order. frames is the number of
// animation frames the chain runs on, each alike (1 for a still image).
func (e *Engine) runChain(s *State, c Chain, frames int) error {
	for i, st := range c.steps {
		if err := s.Ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		if err := applyTraced(s, st, c.specs[i].Name); err != nil {
			return stepError(c.specs[i].Name, err)
		}
		e.observe("transform", c.specs[i].Name, start)
		s.loadW, s.loadH = 0, 0
		// Images are lazy: checking the size after each step costs nothing
		// and stops a chain that would enlarge past the limits before any
		// pixel is computed.
		if err := e.checkSize(s.Image.Width(), s.Image.Height()); err != nil {
			return err
		}
		if err := e.checkFrames(s.Image.Width(), s.Image.Height(), frames); err != nil {
			return err
		}
	}
	return s.Ctx.Err()
}

// finish encodes s.Image (whose metadata finishMetadata has settled) in
// s.Output.Format; w and h are the size reported (one frame's for an
// animation).
func (e *Engine) finish(s *State, w, h int) (*Result, error) {
	_, span := startSpan(s.Ctx, "image.encode", trace.WithAttributes(attribute.String("vitrine.image.format", s.Output.Format)))
	var answer *QualityAnswer
	var searched []QualityAnswer
	var data []byte
	var err error
	if s.Output.Auto && len(s.formats) > 1 && s.Image.Pages() <= 1 {
		data, answer, searched, err = e.bestEncode(s)
	} else if s.Output.Auto && slices.Contains(AutoQualityFormats(), s.Output.Format) && s.Image.Pages() <= 1 {
		data, answer, err = e.autoEncode(s, s.qualities)
	} else {
		start := time.Now()
		data, err = e.encode(s.Image, s.Output)
		if err == nil {
			data, err = e.finishEncoded(data, s.Output)
		}
		if err == nil {
			e.observe("encode", s.Output.Format, start)
		}
	}
	if err == nil {
		span.SetAttributes(attribute.Int("vitrine.image.bytes", len(data)))
	}
	endSpan(span, err)
	if err != nil {
		return nil, err
	}
	return &Result{
		Quality:  answer,
		Searched: searched,
		Data:     data,
		Mime:     mimeOf[s.Output.Format],
		Ext:      s.Output.Format,
		Width:    w,
		Height:   h,
		Headers:  s.Headers,
	}, nil
}

// stepError keeps engine errors as they are and wraps anything else (a
// libvips failure) as an internal error naming the transformation.
func stepError(name string, err error) error {
	var ee *Error
	if errors.As(err, &ee) {
		return err
	}
	return fmt.Errorf("engine: %s: %w", name, err)
}

// admit admits a render of c: it reserves room for c's first guest step
// (Chain.reserve), then waits for a pipeline slot (takeSlot) in a span of
// its own, the engine's admission wait. end gives the slot and the
// reservation back when the render ends.
func (e *Engine) admit(ctx context.Context, c Chain) (_ context.Context, end func(), _ error) {
	ctx, release, err := c.reserve(ctx)
	if err != nil {
		return ctx, nil, err
	}
	_, span := startSpan(ctx, "engine.admission")
	sl, ctx, err := e.takeSlot(ctx)
	endSpan(span, err)
	if err != nil {
		release()
		return ctx, nil, err
	}
	return ctx, func() { sl.end(); release() }, nil
}

// applyTraced applies st to s in a span named for the step: native steps
// as `transform <name>`, guest steps (a WebAssembly filter) with the
// filter's name and version, whose own spans (filters) split the wait for
// an instance from the guest's run.
func applyTraced(s *State, st Step, name string) error {
	if !trace.SpanFromContext(s.Ctx).IsRecording() {
		return st.Apply(s)
	}
	kind := "native"
	attrs := []attribute.KeyValue{attribute.String("vitrine.transformation.name", name)}
	if g, ok := st.(*guestStep); ok {
		kind = "guest"
		if v, ok := g.guest.(interface{ Version() string }); ok {
			attrs = append(attrs, attribute.String("vitrine.filter.name", g.name), attribute.String("vitrine.filter.version", v.Version()))
		}
	}
	attrs = append(attrs, attribute.String("vitrine.transformation.kind", kind))
	ctx, span := startSpan(s.Ctx, "transform "+name, trace.WithAttributes(attrs...))
	parent := s.Ctx
	s.Ctx = ctx
	err := st.Apply(s)
	s.Ctx = parent
	endSpan(span, err)
	return err
}
