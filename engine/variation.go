package engine

import (
	"context"

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

// PickVariation returns the index in vs of the variation of an origW x
// origH original of type srcExt whose pixels are exactly those a render of
// the chain from the original would start from, or -1 for the original.
//
// The rule: the chain's first step reduces the image (loadHinter), so a
// render from the original decodes a JPEG or WebP at the largest scale
// (1/2, 1/4, 1/8) that keeps the size the step asks for (pickShrink); a
// variation is that scaled decode stored losslessly (BuildVariations), so a
// variation of that scale gives the chain the very same pixels and the
// output is the same, byte for byte, whatever the chain does next
// (histogram, a lossless output, a guest). Everything else keeps the
// original: an empty chain, a first step that does not reduce (a crop at
// full resolution, a guest filter), a size no decode scale reaches, a
// source whose decoder does not scale (PNG, TIFF, AVIF, GIF), and a
// missing scale.
func (c Chain) PickVariation(origW, origH int, srcExt string, env Env, vs []Variation) int {
	shrink := c.VariationScale(origW, origH, srcExt, env)
	if shrink == 0 {
		return -1
	}
	for i, v := range vs {
		if isScaledDecode(origW, origH, v.Width, v.Height, shrink) {
			return i
		}
	}
	return -1
}

// VariationScale returns the decoder scale (2, 4 or 8) whose variation
// PickVariation would take for an origW x origH original of type srcExt,
// or 0 when the chain renders from the original whatever is stored: a
// caller need not look the variations up then.
func (c Chain) VariationScale(origW, origH int, srcExt string, env Env) int {
	if len(c.steps) == 0 || origW <= 0 || origH <= 0 || !scalesOnLoad(srcExt) {
		return 0
	}
	lh, ok := c.steps[0].(loadHinter)
	if !ok {
		return 0
	}
	minW, minH := lh.loadHint(&State{OrigWidth: origW, OrigHeight: origH, Env: env})
	if shrink := pickShrink(origW, origH, minW, minH); shrink > 1 {
		return shrink
	}
	return 0
}

// scalesOnLoad reports whether the decoder of type ext decodes at 1/2,
// 1/4 and 1/8 of the size (JPEG, WebP).
func scalesOnLoad(ext string) bool { return ext == "jpg" || ext == "webp" }

// isScaledDecode reports whether w x h is the size a W x H image decodes
// at with shrink f: libjpeg rounds up; libwebp's scaler may round either
// way, hence the one pixel of slack (a variation is made by that very
// decode, so its pixels are the decode's whatever the rounding).
func isScaledDecode(W, H, w, h, f int) bool {
	return iabs(ceilDiv(W, f)-w) <= 1 && iabs(ceilDiv(H, f)-h) <= 1
}

// BuiltVariation is one variation made by BuildVariations: its encoded
// bytes, its size and the original's (as decoded, before orientation).
type BuiltVariation struct {
	Width, Height         int
	OrigWidth, OrigHeight int
	Ext                   string
	Data                  []byte
}

// BuildVariations makes src's variations at the given decoder scales (2,
// 4, 8; others are skipped): for a JPEG or WebP, each is the decoder's
// scaled decode, the very pixels a render from the original with
// shrink-on-load starts from. It returns none for other types, whose
// decoders do not scale (a copy resized from them would not give the same
// output), and for an animation.
//
// Why lossless, and why TIFF with zstd and the horizontal predictor: only
// exact pixels make a render from a variation give the original's output.
// A q98 4:4:4 JPEG copy, within a level or two of them, changed enough of
// the q80 output's quantisation choices to drop its luma SSIM against the
// original's to 0.98-0.995 for most chains on photographs. Of the lossless formats,
// rendering a 12 MP JPEG's 1000 px copy to an 800 px JPEG took (one core)
// 17 ms from TIFF zstd (1.33 MB), 15 ms from an uncompressed PNG (2.25 MB),
// 24-28 ms from TIFF LZW or deflate and PNG deflate (1.4-1.6 MB), 35 ms
// from lossless WebP, against 63 ms from the 4.6 MB original and 22 ms
// from the q98 JPEG. TIFF keeps the orientation and ICC profile, so the
// output policy treats the copy as it treats the original.
func (e *Engine) BuildVariations(ctx context.Context, src []byte, scales []int) ([]BuiltVariation, error) {
	info, err := e.Probe(src)
	if err != nil {
		return nil, err
	}
	if info.Frames > 1 || !scalesOnLoad(info.Ext) {
		return nil, nil
	}
	sl, ctx, err := e.takeSlot(ctx)
	if err != nil {
		return nil, err
	}
	defer sl.end()
	var out []BuiltVariation
	for _, f := range scales {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if f != 2 && f != 4 && f != 8 {
			continue
		}
		v, err := buildVariation(src, info.Ext, f)
		if err != nil {
			return nil, err
		}
		v.OrigWidth, v.OrigHeight = info.Width, info.Height
		out = append(out, v)
	}
	return out, nil
}

// buildVariation decodes src (a JPEG or WebP) at 1/shrink of its size, as
// decode does with shrink-on-load, and stores the pixels as they are.
func buildVariation(src []byte, ext string, shrink int) (BuiltVariation, error) {
	p := vips.NewImportParams()
	p.FailOnError.Set(false)
	if ext == "jpg" {
		p.JpegShrinkFactor.Set(shrink)
	} else {
		p.WebpScaleFactor.Set(1 / float64(shrink))
	}
	img, err := vips.LoadImageFromBuffer(src, p)
	if err != nil {
		return BuiltVariation{}, invalidImage(err)
	}
	defer img.Close()
	data, _, err := img.ExportTiff(&vips.TiffExportParams{Compression: vips.TiffCompressionZstd,
		Predictor: vips.TiffPredictorHorizontal})
	if err != nil {
		return BuiltVariation{}, err
	}
	return BuiltVariation{Width: img.Width(), Height: img.Height(), Ext: "tif", Data: data}, nil
}

// iabs is |v|.
func iabs(v int) int { return max(v, -v) }
