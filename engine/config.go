package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"time"
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
	// Effort is each encoder's effort: CPU time spent for fewer bytes at
	// the same look.
	Effort Effort `yaml:"effort"`
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
	// VideoUploads are the `uploads.video*` keys (videoconfig.go).
	VideoUploads `yaml:",inline"`
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

// DefaultQualityTarget is autoQuality.target's default.
const DefaultQualityTarget = "high"

// AutoQuality configures compress:level=auto and quality=auto.
type AutoQuality struct {
	// Target is the named target used when a request names none: low,
	// medium, high or lossless-like (default high).
	Target string `yaml:"target"`
}

// Validate reports an unknown target.
func (a AutoQuality) Validate() error {
	if a.Target != "" && !slices.Contains(QualityLevels, a.Target) {
		return fmt.Errorf("engine: autoQuality.target: %q is not one of %v", a.Target, QualityLevels)
	}
	return nil
}

// Effort sets each encoder's effort, for fixed-quality renders and for
// auto quality's encodes (the answer of a search, stored and reused,
// earns a slower encode); unset means the default.
type Effort struct {
	// AVIF is libaom's effort, 1 (fastest) to 9 (default 1, imgproxy's
	// speed 8); AVIFAuto for auto quality (default 3). libvips takes 0 as
	// its own default (4), so 0 is refused.
	AVIF     *int `yaml:"avif"`
	AVIFAuto *int `yaml:"avifAuto"`
	// JXL is libjxl's effort, 1 (fastest) to 9 (default 4); JXLAuto for
	// auto quality (default 5).
	JXL     *int `yaml:"jxl"`
	JXLAuto *int `yaml:"jxlAuto"`
	// WebP is libwebp's method, 0 (fastest) to 6 (default 4, libvips').
	WebP *int `yaml:"webp"`
	// GIF is the GIF quantiser's effort, 1 (fastest) to 10 (default 3).
	GIF *int `yaml:"gif"`
}

// Default efforts (Effort); the measurements that chose them are in
// e2e/README.md, Encoder settings.
const (
	DefaultAVIFEffort     = 1
	DefaultAVIFAutoEffort = 3
	DefaultJXLEffort      = 4
	DefaultJXLAutoEffort  = 5
	DefaultWebPEffort     = 4
	DefaultGIFEffort      = 3
)

// withDefaults sets every unset effort to its default.
func (f Effort) withDefaults() Effort {
	for _, d := range []struct {
		p   **int
		def int
	}{{&f.AVIF, DefaultAVIFEffort}, {&f.AVIFAuto, DefaultAVIFAutoEffort}, {&f.JXL, DefaultJXLEffort},
		{&f.JXLAuto, DefaultJXLAutoEffort}, {&f.WebP, DefaultWebPEffort}, {&f.GIF, DefaultGIFEffort}} {
		if *d.p == nil {
			v := d.def
			*d.p = &v
		}
	}
	return f
}

// Validate reports an effort outside its encoder's range, naming its key.
func (f Effort) Validate() error {
	for _, c := range []struct {
		key    string
		v      *int
		lo, hi int
	}{{"avif", f.AVIF, 1, 9}, {"avifAuto", f.AVIFAuto, 1, 9}, {"jxl", f.JXL, 1, 9}, {"jxlAuto", f.JXLAuto, 1, 9},
		{"webp", f.WebP, 0, 6}, {"gif", f.GIF, 1, 10}} {
		if c.v != nil && (*c.v < c.lo || *c.v > c.hi) {
			return fmt.Errorf("engine: effort.%s must be between %d and %d, got %d", c.key, c.lo, c.hi, *c.v)
		}
	}
	return nil
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
	}{{"svg", c.Uploads.SVG}, {"pdf", c.Uploads.PDF}, {"mp4", c.Uploads.Video}, {"mov", c.Uploads.Video}, {"webm", c.Uploads.Video}} {
		if o.on && !slices.Contains(c.Uploads.Formats, o.ext) {
			c.Uploads.Formats = append(c.Uploads.Formats, o.ext)
		}
	}
	if c.Uploads.PDFDPI == 0 {
		c.Uploads.PDFDPI = DefaultPDFDPI
	}
	c.Uploads.VideoUploads = c.Uploads.VideoUploads.withDefaults()
	if c.MaxAnimationPixels == 0 {
		c.MaxAnimationPixels = DefaultMaxPixels
	}
	if c.JPEGQuality == 0 {
		c.JPEGQuality = DefaultJPEGQuality
	}
	c.Effort = c.Effort.withDefaults()
	return c
}

// Validate reports the first field out of range. Zero values are valid (they
// mean "default").
func (c Config) Validate() error {
	if err := c.AutoQuality.Validate(); err != nil {
		return err
	}
	if err := c.Effort.Validate(); err != nil {
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
	if err := c.Uploads.VideoUploads.Validate(); err != nil {
		return err
	}
	for _, f := range c.Uploads.Formats {
		if VideoTypes[f] != "" && !c.Uploads.Video {
			return fmt.Errorf("engine: uploads.formats lists %s: set uploads.video to take videos", f)
		}
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
