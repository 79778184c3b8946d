package engine

import (
	"context"
	"fmt"
	"image"

	"github.com/davidbyttow/govips/v2/vips"
)

// AnalysisSize is the box, in pixels, that Analyze decodes an image into
// (shrink-on-load where the format allows): enough for the placeholders,
// the colours and the perceptual hash, and within ThumbHash's 100 pixels.
const AnalysisSize = 64

// AnalyzeOptions says which properties Analyze computes.
type AnalyzeOptions struct {
	// Placeholders computes the BlurHash (4 by 3 components) and the
	// ThumbHash.
	Placeholders bool
	// Colours computes the average colour and the palette.
	Colours bool
	// PaletteSize is the number of dominant colours (default 5).
	PaletteSize int
	// PHash computes the perceptual hash.
	PHash bool
}

// Analysis is what Analyze learned; fields not asked for are zero.
type Analysis struct {
	BlurHash, ThumbHash string
	AverageColour       string
	Palette             []string
	PHash               uint64
	HasPHash            bool
}

// Analyze decodes data into a thumbnail of at most AnalysisSize pixels a
// side, upright (EXIF orientation applied), and computes the properties
// opts asks for. It holds a pipeline slot while libvips decodes. Asking for
// nothing decodes nothing.
func (e *Engine) Analyze(ctx context.Context, data []byte, opts AnalyzeOptions) (Analysis, error) {
	var a Analysis
	if !opts.Placeholders && !opts.Colours && !opts.PHash {
		return a, nil
	}
	img, err := e.Thumbnail(ctx, data, AnalysisSize)
	if err != nil {
		return a, err
	}
	if opts.Placeholders {
		a.BlurHash = BlurHash(img, 4, 3)
		a.ThumbHash = ThumbHash(img)
	}
	if opts.Colours {
		n := opts.PaletteSize
		if n <= 0 {
			n = 5
		}
		a.AverageColour, a.Palette = Colours(img, n)
	}
	if opts.PHash {
		a.PHash, a.HasPHash = PHash(img), true
	}
	return a, nil
}

// Thumbnail decodes data into 8-bit sRGB NRGBA pixels in Go memory, fitted
// within size by size pixels (never enlarged), upright, first frame only.
// JPEG and WebP decode at a reduced scale (shrink-on-load), so the cost
// grows far slower than the image.
func (e *Engine) Thumbnail(ctx context.Context, data []byte, size int) (*image.NRGBA, error) {
	if _, err := e.Probe(data); err != nil {
		return nil, err
	}
	if err := e.acquire(ctx); err != nil {
		return nil, err
	}
	defer e.release()
	ref, err := vips.NewThumbnailWithSizeFromBuffer(data, size, size, vips.InterestingNone, vips.SizeDown)
	if err != nil {
		return nil, invalidImage(err)
	}
	defer ref.Close()
	defer stopOnCancel(ctx, ref)()
	if err := toSRGB8(ref); err != nil {
		return nil, fmt.Errorf("analysis thumbnail: %w", err)
	}
	switch b := ref.Bands(); {
	case b == 3:
		if err := ref.BandJoinConst([]float64{255}); err != nil {
			return nil, fmt.Errorf("analysis thumbnail: add alpha: %w", err)
		}
	case b > 4:
		if err := ref.ExtractBand(0, 4); err != nil {
			return nil, fmt.Errorf("analysis thumbnail: %w", err)
		}
	}
	w, h := ref.Width(), ref.Height()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	if err := writeInto(ref, img.Pix); err != nil {
		return nil, fmt.Errorf("analysis thumbnail: %w", err)
	}
	return img, nil
}
