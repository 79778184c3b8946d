package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Config is the engine's part of the service configuration. The zero value
// works: every field has a default applied by New.
type Config struct {
	// Concurrency bounds how many libvips pipelines run at once; 0 means
	// twice the number of CPUs (as imgproxy's workers): each pipeline runs on
	// one libvips thread, and with only one per CPU the CPUs idle while
	// pipelines read sources and write responses. Extra requests wait (and give
	// up when their context ends) without holding their source in memory.
	Concurrency int `yaml:"concurrency"`
	// Limits are the image size limits. The configuration file keeps them
	// in its `limits` section, which engine shares with api's request
	// limits, so main composes that section rather than this field.
	Limits `yaml:"-"`
	// Presets maps a name usable in t[] to the chain it expands to, each entry
	// a t[] element such as "thumbnail:width=100,height=100". Preset parameters
	// override request parameters; request parameters fill the rest.
	Presets map[string][]string `yaml:"transformationPresets"`
	// ICCProfiles maps profile names to ICC files for the icc transformation;
	// the name "default" is used when no profile is given.
	ICCProfiles map[string]string `yaml:"iccProfiles"`
	// DefaultWatermark is the image identifier watermark uses when img is not given.
	DefaultWatermark string `yaml:"defaultWatermark"`
	// JPEGQuality is the quality of JPEG output without compress (default 80).
	JPEGQuality int `yaml:"jpegQuality"`
	// Uploads says which image types may be uploaded. The configuration
	// file keeps it in its `uploads` section, which engine shares with
	// api's upload tokens, so main composes that section rather than this
	// field.
	Uploads Uploads `yaml:"-"`
	// Output is the policy for transformed and converted images.
	Output OutputPolicy `yaml:"output"`
	// AutoQuality configures compress:level=auto and quality=auto.
	AutoQuality AutoQuality `yaml:"autoQuality"`
	// PixelPool bounds the pixel buffers kept for guest steps.
	PixelPool PixelPool `yaml:"pixelPool"`
	// Logger receives libvips' own messages (errors; warnings at debug
	// level); default slog.Default(). libvips is the process's: the first
	// New's logger is the one used.
	Logger *slog.Logger `yaml:"-"`
}

// Limits are the engine's image size limits, each checked before any pixel
// is decoded where the image's header allows.
type Limits struct {
	// MaxWidth and MaxHeight cap each side of an input image, read from its
	// header before any pixel is decoded (default 32768).
	MaxWidth  int `yaml:"maxWidth"`
	MaxHeight int `yaml:"maxHeight"`
	// MaxPixels caps width*height of an input image (default 100 megapixels).
	MaxPixels int64 `yaml:"maxPixels"`
	// MaxTransformations caps the length of a chain after presets expand (default 20).
	MaxTransformations int `yaml:"maxTransformations"`
	// MaxFrames caps the frames of an animated GIF or WebP, read from its
	// header before any pixel is decoded (default 500).
	MaxFrames int `yaml:"maxFrames"`
	// MaxAnimationPixels caps width*height*frames of an animation (default
	// 100 megapixels, as MaxPixels for one image).
	MaxAnimationPixels int64 `yaml:"maxAnimationPixels"`
}

// Uploads says which image types may be uploaded.
type Uploads struct {
	// Formats lists the input types Inspect accepts for upload, by
	// extension: jpg, png, gif, webp, tif, avif, heic, jxl (default jpg, png,
	// gif, webp). Stored images of any type are transformed.
	Formats []string `yaml:"formats"`
	// SVG accepts SVG uploads (default false), each checked before
	// librsvg renders it: scripts, event handlers, external references and
	// entity declarations are refused (svg.go).
	SVG bool `yaml:"svg"`
	// PDF accepts PDF uploads (default false); the first page is the
	// image, rendered at PDFDPI.
	PDF bool `yaml:"pdf"`
	// PDFDPI is the resolution PDF pages are rendered at (default 150, at
	// most 600); the size limits apply to the rendered page.
	PDFDPI int `yaml:"pdfDPI"`
}

// OutputPolicy is the policy for transformed and converted images.
type OutputPolicy struct {
	// KeepMetadata keeps the source's EXIF, XMP, IPTC and comments in
	// transformed and converted outputs. By default (false) they are removed,
	// after the EXIF orientation has been applied to the pixels; see
	// metadata.go. Originals are always served as uploaded.
	KeepMetadata bool `yaml:"keepMetadata"`
}

// PixelPool bounds the idle pixel buffers kept for guest steps
// (pixelpool.go).
type PixelPool struct {
	// MaxIdleMB bounds the idle buffers' bytes (default 192).
	MaxIdleMB int `yaml:"maxIdleMB"`
	// IdleTimeout unmaps a buffer unused this long (default 30s).
	IdleTimeout time.Duration `yaml:"idleTimeout"`
}

// Info describes an image as read from its header.
type Info struct {
	Mime   string // image/jpeg, image/png, image/gif, image/webp, image/tiff, image/avif, image/heic, image/jxl, image/svg+xml, application/pdf
	Ext    string // jpg, png, gif, webp, tif, avif, heic, jxl, svg, pdf
	Width  int
	Height int
	// Frames is the number of frames of an animation, 1 for a still image.
	Frames int
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
	// Qualities are the auto-quality answers stored for this image, which
	// a render with auto quality starts from (one encode when one fits).
	Qualities []QualityAnswer
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
	// (nil when it used a stored one or no auto quality), for the caller
	// to store with the image.
	Quality *QualityAnswer
	// Searched are the further answers a best-format render searched for
	// (the candidate formats not chosen), also for the caller to store.
	Searched []QualityAnswer
}

// Defaults applied by New to zero fields of Config.
const (
	DefaultMaxSide            = 32768
	DefaultMaxPixels          = 100_000_000
	DefaultMaxTransformations = 20
	DefaultMaxFrames          = 500
	DefaultJPEGQuality        = 80
)

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = 2 * runtime.NumCPU()
	}
	if c.MaxWidth == 0 {
		c.MaxWidth = DefaultMaxSide
	}
	if c.MaxHeight == 0 {
		c.MaxHeight = DefaultMaxSide
	}
	if c.MaxPixels == 0 {
		c.MaxPixels = DefaultMaxPixels
	}
	if c.MaxTransformations == 0 {
		c.MaxTransformations = DefaultMaxTransformations
	}
	if c.MaxFrames == 0 {
		c.MaxFrames = DefaultMaxFrames
	}
	if len(c.Uploads.Formats) == 0 {
		c.Uploads.Formats = DefaultUploadFormats
	}
	// uploads.svg and uploads.pdf add their types to the accepted ones.
	c.Uploads.Formats = slices.Clone(c.Uploads.Formats)
	for _, o := range []struct {
		ext string
		on  bool
	}{{"svg", c.Uploads.SVG}, {"pdf", c.Uploads.PDF}} {
		if o.on && !slices.Contains(c.Uploads.Formats, o.ext) {
			c.Uploads.Formats = append(c.Uploads.Formats, o.ext)
		}
	}
	if c.Uploads.PDFDPI == 0 {
		c.Uploads.PDFDPI = DefaultPDFDPI
	}
	if c.MaxAnimationPixels == 0 {
		c.MaxAnimationPixels = DefaultMaxPixels
	}
	if c.JPEGQuality == 0 {
		c.JPEGQuality = DefaultJPEGQuality
	}
	return c
}

// Validate reports the first field out of range. Zero values are valid (they
// mean "default").
func (c Config) Validate() error {
	if err := c.AutoQuality.Validate(); err != nil {
		return err
	}
	switch {
	case c.Concurrency < 0:
		return fmt.Errorf("engine: concurrency must not be negative, got %d", c.Concurrency)
	case c.PixelPool.MaxIdleMB < 0 || c.PixelPool.IdleTimeout < 0:
		return fmt.Errorf("engine: pixelPool.maxIdleMB and pixelPool.idleTimeout must not be negative")
	case c.MaxWidth < 0 || c.MaxHeight < 0 || c.MaxPixels < 0:
		return fmt.Errorf("engine: maxWidth, maxHeight and maxPixels must not be negative")
	case c.MaxFrames < 0 || c.MaxAnimationPixels < 0:
		return fmt.Errorf("engine: maxFrames and maxAnimationPixels must not be negative")
	case c.MaxTransformations < 0:
		return fmt.Errorf("engine: maxTransformations must not be negative, got %d", c.MaxTransformations)
	case c.Uploads.PDFDPI < 0 || c.Uploads.PDFDPI > MaxPDFDPI:
		return fmt.Errorf("engine: uploads.pdfDPI must be between 1 and %d, got %d", MaxPDFDPI, c.Uploads.PDFDPI)
	case c.JPEGQuality < 0 || c.JPEGQuality > 100:
		return fmt.Errorf("engine: jpegQuality must be between 1 and 100, got %d", c.JPEGQuality)
	}
	if err := validUploadFormats(c.Uploads.Formats); err != nil {
		return err
	}
	for name, specs := range c.Presets {
		if name == "" {
			return errors.New("engine: a preset has an empty name")
		}
		if len(specs) == 0 {
			return fmt.Errorf("engine: preset %q is empty", name)
		}
	}
	return nil
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
	pixels.configure(cfg.PixelPool.MaxIdleMB<<20, cfg.PixelPool.IdleTimeout)
	return &Engine{cfg: cfg, reg: NewRegistry(), sem: make(chan struct{}, cfg.Concurrency), closed: make(chan struct{})}, nil
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

	ctx, end, err := e.admit(ctx, req.Chain)
	if err != nil {
		return nil, err
	}
	defer end()
	return e.render(ctx, src, req)
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
	ctx, end, err := e.admit(ctx, req.Chain)
	if err != nil {
		return nil, err
	}
	defer end()
	src, err := load(ctx)
	if err != nil {
		return nil, err
	}
	return e.render(ctx, src, req)
}

// render decodes src, runs the chain and encodes; the caller holds a
// pipeline slot.
func (e *Engine) render(ctx context.Context, src []byte, req Request) (*Result, error) {
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
	s.qualities = req.Qualities
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
