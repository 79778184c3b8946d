package engine

import (
	"context"

	"github.com/davidbyttow/govips/v2/vips"
)

// Transformation is a named image operation. Parse validates the parameters
// once, before any pixel is touched, and returns a ready Step; every problem is
// an *Error of KindInvalid naming the transformation and the parameter.
type Transformation interface {
	Parse(p *Params) (Step, error)
}

// Step is a parsed transformation ready to run on one image.
type Step interface {
	Apply(s *State) error
}

// State is what a Step works on: the current image and what the chain has
// decided about the output so far.
type State struct {
	Ctx context.Context
	// Image is the current image. Most govips operations change it in place;
	// a step that builds a new ImageRef must Close the old one.
	Image *vips.ImageRef
	// Env gives access to the image's metadata and to other images of the
	// same user (watermark).
	Env Env
	// Output collects encode-time options (convert, compress, progressive, strip).
	Output *Output
	// OrigWidth and OrigHeight are the stored image's dimensions; drawPois
	// coordinates refer to them.
	OrigWidth, OrigHeight int
	// Headers are extra response headers, named without the service prefix
	// (for example "POIs-Used").
	Headers map[string]string
	// engine is the running engine, for steps that decode further images.
	engine *Engine
	// qualities are the stored auto-quality answers of the request.
	qualities []QualityAnswer
	// target is the auto-quality target resolved for this render's image.
	target *resolved
	// formats are the candidate formats of a best-format render.
	formats []string
	// loadW and loadH, when not zero, are the size Image would have had
	// without shrink-on-load; the first step computes its geometry from them
	// (see State.Size) so that results are exact either way.
	loadW, loadH int
}

// Env is what the service gives a chain about the image it transforms.
type Env struct {
	// Metadata is the image's metadata (nil when it has none).
	Metadata map[string]any
	// LoadImage returns the stored bytes of another image of the same user.
	// A missing image returns an error that wraps fs.ErrNotExist.
	LoadImage func(ctx context.Context, imageIdentifier string) ([]byte, error)
}

// Output holds encode options decided by the chain and by negotiation.
type Output struct {
	// Format is the output extension: jpg, png, gif, webp or avif.
	Format string
	// Level is the compress level (0-100); it applies only when LevelSet.
	Level int
	// LevelSet reports that compress ran: an explicit level 0 is the lowest
	// quality, not "the encoder's default": an explicit 0 is a value.
	LevelSet bool
	// Auto asks for the lowest quality meeting a perceptual target
	// (compress:level=auto or the quality=auto request parameter);
	// AutoTarget names the target ("" for the configured one).
	Auto       bool
	AutoTarget string
	// Searched marks an encode of auto quality's (a search's or its
	// answer's): the encoders that give markedly fewer bytes at the same
	// SSIMULACRA 2 for more time do so there (config.go, Effort.JXLAuto).
	Searched bool
	// Progressive asks for progressive JPEG / interlaced PNG and GIF.
	Progressive bool
	// Strip removes metadata (EXIF, ICC, comments) on encode, even when
	// Config.Output.KeepMetadata is set.
	Strip bool
	// KeepProfile keeps the ICC profile the icc transformation embedded when
	// the rest of the metadata is removed.
	KeepProfile bool
	// clean records that the output policy removed the metadata
	// (finishMetadata), for the checks on the encoded bytes.
	clean bool
}

// StepFunc adapts a function to Step.
type StepFunc func(s *State) error

// Apply calls f.
func (f StepFunc) Apply(s *State) error { return f(s) }

// TransformationFunc adapts a parse function to Transformation.
type TransformationFunc func(p *Params) (Step, error)

// Parse calls f.
func (f TransformationFunc) Parse(p *Params) (Step, error) { return f(p) }
