package engine

import (
	"context"
	"errors"
)

// Config is the engine's part of the service configuration. The zero value
// works: every field has a default applied by New.
type Config struct {
	// Concurrency bounds how many libvips pipelines run at once; 0 means the
	// number of CPUs. Extra requests wait (and give up when their context ends).
	Concurrency int `yaml:"concurrency"`
	// MaxWidth and MaxHeight cap each side of an input image, read from its
	// header before any pixel is decoded (default 32768).
	MaxWidth  int `yaml:"maxWidth"`
	MaxHeight int `yaml:"maxHeight"`
	// MaxPixels caps width*height of an input image (default 100 megapixels).
	MaxPixels int64 `yaml:"maxPixels"`
	// MaxTransformations caps the length of a chain after presets expand (default 20).
	MaxTransformations int `yaml:"maxTransformations"`
	// Presets maps a name usable in t[] to the chain it expands to, each entry
	// a t[] element such as "thumbnail:width=100,height=100". Preset parameters
	// override request parameters; request parameters fill the rest.
	Presets map[string][]string `yaml:"presets"`
	// ICCProfiles maps profile names to ICC files for the icc transformation;
	// the name "default" is used when no profile is given.
	ICCProfiles map[string]string `yaml:"iccProfiles"`
	// DefaultWatermark is the image identifier watermark uses when img is not given.
	DefaultWatermark string `yaml:"defaultWatermark"`
	// JPEGQuality is the quality of JPEG output without compress (default 80).
	JPEGQuality int `yaml:"jpegQuality"`
}

// Info describes an image as read from its header.
type Info struct {
	Mime   string // image/jpeg, image/png, image/gif, image/webp, image/tiff
	Ext    string // jpg, png, gif, webp, tif
	Width  int
	Height int
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
}

// errNotImplemented marks API the engine issue is filling in.
var errNotImplemented = errors.New("engine: not implemented yet")

// Engine runs transformation chains. It is safe for concurrent use.
type Engine struct {
	cfg Config
	reg *Registry
	sem chan struct{}
}

// Registry returns the engine's transformation registry, for start-up
// registration of custom transformations.
func (e *Engine) Registry() *Registry { return e.reg }

// Probe sniffs the type of data and reads its dimensions from the header
// without decoding pixels, enforcing the size limits (KindTooLarge),
// unsupported types (KindUnsupported, message `Unsupported image type: <mime>`)
// and unreadable headers or zero sizes (KindCorrupt, `Invalid image`).
func (e *Engine) Probe(data []byte) (Info, error) { return Info{}, errNotImplemented }

// Inspect is Probe plus a full decode, so that an upload whose pixels are
// corrupt or truncated is refused (KindCorrupt) before it is stored.
func (e *Engine) Inspect(ctx context.Context, data []byte) (Info, error) {
	return Info{}, errNotImplemented
}

// Process decodes src, runs the chain and encodes the requested format. With
// an empty chain and no format change it returns src untouched.
func (e *Engine) Process(ctx context.Context, src []byte, req Request) (*Result, error) {
	return nil, errNotImplemented
}
