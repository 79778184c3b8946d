package engine

import (
	"context"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// A variation is a downscaled working copy of a stored image that the
// service keeps beside it (storage's stored variations). Decoding a
// 1000 px variation instead of a 4000 px original skips most of the
// entropy decoding, which no JPEG decode scale avoids.

// Variation is one stored variation as the picker sees it: its pixels as
// decoded, before any EXIF orientation.
type Variation struct {
	Width, Height int
}

// VariationSource says that a request's source is a variation of an
// OrigWidth x OrigHeight original of type OrigExt (as Probe reports them):
// the chain's geometry, the output's default format and the steps' view of
// the stored image stay the original's.
type VariationSource struct {
	OrigWidth, OrigHeight int
	OrigExt               string
}

// needsOriginal is implemented by steps whose output depends on every
// source pixel rather than on the picture (histogram counts pixels): the
// picker keeps the original for a chain that holds one.
type needsOriginal interface{ needsOriginal() }

func (histogram) needsOriginal() {}

// PickVariation returns the index in vs of the smallest variation of an
// origW x origH image that still holds enough pixels for the chain, or -1
// for the original. The rule is shrink-on-load's, with its margin: the
// chain's first step must reduce the image (loadHinter) and the variation
// must be at least shrinkMargin times the size that step asks its input
// decoded at. Everything else (an empty chain, a first step that crops at
// full resolution or runs a guest, a histogram anywhere, a lossless output)
// keeps the original. format and srcExt are the request's output format
// ("" for the chain's or the source's) and the original's type.
//
// Why not for a lossless output (PNG, GIF): its size measures every pixel's
// noise exactly, and a variation's re-encode changes that noise: a PNG from
// a JPEG variation was 10-40% off the PNG from the original in the fidelity
// test, though it looked the same (luma SSIM over 0.99).
func (c Chain) PickVariation(origW, origH int, format, srcExt string, env Env, vs []Variation) int {
	if len(c.steps) == 0 || origW <= 0 || origH <= 0 {
		return -1
	}
	switch outputFormat(Request{Chain: c, Format: format}, srcExt) {
	case "jpg", "jpeg", "webp", "avif":
	default:
		return -1
	}
	for _, st := range c.steps {
		if _, ok := st.(needsOriginal); ok {
			return -1
		}
	}
	lh, ok := c.steps[0].(loadHinter)
	if !ok {
		return -1
	}
	minW, minH := lh.loadHint(&State{OrigWidth: origW, OrigHeight: origH, Env: env})
	if minW <= 0 || minH <= 0 {
		return -1
	}
	margin := shrinkMargin
	if srcExt != "jpg" && srcExt != "webp" {
		margin = resampledMargin
	}
	best := -1
	for i, v := range vs {
		if v.Width >= origW || v.Height >= origH {
			continue
		}
		if v.Width < minW*margin || v.Height < minH*margin {
			continue
		}
		if best < 0 || v.Width < vs[best].Width {
			best = i
		}
	}
	return best
}

// resampledMargin replaces shrinkMargin for a variation resampled from its
// original (one of a PNG, TIFF or AVIF: their decoders do not scale). Why:
// resizing twice (original to variation, variation to output) blurs fine
// detail more than resizing once; text in a screenshot served as WebP from
// a variation barely larger than the output fell to luma SSIM 0.993 in the
// fidelity test. A variation twice the output's size keeps it over 0.995.
const resampledMargin = 2

// BuiltVariation is one variation made by BuildVariations: its encoded
// bytes, its size and the original's (as decoded, before orientation).
type BuiltVariation struct {
	Width, Height         int
	OrigWidth, OrigHeight int
	Ext                   string
	Data                  []byte
}

// variationQuality is the JPEG quality of JPEG variations.
//
// Why JPEG q98 without chroma subsampling for JPEG sources: a JPEG decodes
// several times faster than a lossless WebP or PNG of the same pixels
// (a 1000 px lossless WebP took 32 ms against 37 ms for the 12 MP original
// at 800 px; the q98 JPEG 14-16 ms), and the variation's pixels are the
// decoder's scaled decode, so its re-encode is the only loss: at q90 the
// output from a variation of independent per-pixel noise was 10-15% larger
// than from the original, at q95 up to 11%, at q98 up to 9%, and SSIM rose
// with quality (engine/variation_test.go). 4:2:0 would halve colour detail a
// second time. Other sources (PNG, WebP, AVIF, TIFF, with or without alpha)
// get lossless WebP: their pixels stay exact, alpha is kept, and it decodes
// faster than PNG, far faster than AVIF.
const variationQuality = 98

// BuildVariations makes the variations of src at the given widths (each
// under the source's width; largest first), keeping the metadata (EXIF
// orientation, ICC profile) so that the output policy treats a variation as
// it treats the original. It returns none for an animation.
//
// A JPEG or WebP variation whose width is the source's divided by 2, 4 or 8
// (the default ladder's) is the decoder's own scaled decode, the very
// pixels a request decoding the original with shrink-on-load starts from:
// only the variation's re-encode differs. Other widths, and other types,
// are resized with the engine's kernel from the full decode.
func (e *Engine) BuildVariations(ctx context.Context, src []byte, widths []int) ([]BuiltVariation, error) {
	info, err := e.Probe(src)
	if err != nil {
		return nil, err
	}
	if info.Frames > 1 {
		return nil, nil
	}
	sl, ctx, err := e.takeSlot(ctx)
	if err != nil {
		return nil, err
	}
	defer sl.release()
	W, H := info.Width, info.Height
	var out []BuiltVariation
	for _, w := range widths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if w >= W || w <= 0 {
			continue
		}
		v, err := buildVariation(src, info.Ext, W, H, w)
		if err != nil {
			return nil, err
		}
		v.OrigWidth, v.OrigHeight = W, H
		out = append(out, v)
	}
	return out, nil
}

// buildVariation decodes src (W x H, of type ext) for a variation w pixels
// wide and encodes it.
func buildVariation(src []byte, ext string, W, H, w int) (BuiltVariation, error) {
	p := vips.NewImportParams()
	p.FailOnError.Set(false)
	h := scaledHeight(W, H, w)
	shrink := 1
	if ext == "jpg" || ext == "webp" {
		shrink = pickShrink(W, H, w, h)
		for _, f := range []int{2, 4, 8} {
			if iabs(ceilDiv(W, f)-w) <= max(w/100, 1) {
				// The decoder's scaled size is the width asked for (give
				// or take rounding): keep it exactly.
				shrink, w, h = f, ceilDiv(W, f), ceilDiv(H, f)
			}
		}
		if ext == "jpg" {
			p.JpegShrinkFactor.Set(shrink)
		} else {
			p.WebpScaleFactor.Set(1 / float64(shrink))
		}
	}
	img, err := vips.LoadImageFromBuffer(src, p)
	if err != nil {
		return BuiltVariation{}, invalidImage(err)
	}
	defer img.Close()
	if err := ResizeExact(img, w, h); err != nil {
		return BuiltVariation{}, err
	}
	v := BuiltVariation{Width: w, Height: h}
	if ext == "jpg" {
		v.Ext = "jpg"
		v.Data, _, err = img.ExportJpeg(&vips.JpegExportParams{Quality: variationQuality,
			SubsampleMode: vips.VipsForeignSubsampleOff, OptimizeCoding: true})
	} else {
		v.Ext = "webp"
		v.Data, _, err = img.ExportWebp(&vips.WebpExportParams{Lossless: true, ReductionEffort: 1})
	}
	if err != nil {
		return BuiltVariation{}, err
	}
	return v, nil
}

// scaledHeight is the height of a W x H image resized to width w.
func scaledHeight(W, H, w int) int { return max(int(math.Round(float64(H)*float64(w)/float64(W))), 1) }

// iabs is |v|.
func iabs(v int) int { return max(v, -v) }
