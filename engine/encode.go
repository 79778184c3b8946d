package engine

import (
	"fmt"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// mimeOf maps output extensions to MIME types.
var mimeOf = map[string]string{
	"jpg":  "image/jpeg",
	"png":  "image/png",
	"gif":  "image/gif",
	"webp": "image/webp",
	"avif": "image/avif",
	"tif":  "image/tiff",
	"jxl":  "image/jxl",
}

// MimeOf returns the MIME type of an output extension and whether the engine
// encodes it.
func MimeOf(ext string) (string, bool) {
	m, ok := mimeOf[ext]
	return m, ok
}

// Encoder settings that are not the client's to choose.
const (
	avifQuality = 60
	// jxlQuality is JPEG XL's quality without compress: libvips' default
	// (distance 2.35 on libjxl's scale).
	jxlQuality      = 75
	webpQuality     = 80
	pngDefaultLevel = 6
)

// pngFilters maps the ones digit of a compress level to a PNG filter, as
// ImageMagick does: 0 none, 1 sub, 2 up, 3 average, 4 Paeth, 5 and above
// adaptive.
var pngFilters = [...]vips.PngFilter{
	vips.PngFilterNone, vips.PngFilterSub, vips.PngFilterUo, vips.PngFilterAvg, vips.PngFilterPaeth,
	vips.PngFilterAll, vips.PngFilterAll, vips.PngFilterAll, vips.PngFilterAll, vips.PngFilterAll,
}

// encode writes img in the format out.Format with the chain's options.
func (e *Engine) encode(img *vips.ImageRef, out *Output) ([]byte, error) {
	var (
		buf []byte
		err error
	)
	switch out.Format {
	case "jpg":
		// JPEG has no alpha: transparent areas become white, as users expect
		// of a transparent PNG served as JPEG (libvips would make them black).
		if img.HasAlpha() {
			if err := img.Flatten(&vips.Color{R: 255, G: 255, B: 255}); err != nil {
				return nil, err
			}
		}
		q := e.cfg.JPEGQuality
		if out.LevelSet {
			q = max(out.Level, 1)
		}
		buf, _, err = img.ExportJpeg(jpegParams(q, out))
	case "png":
		p := &vips.PngExportParams{
			Compression:   pngDefaultLevel,
			Filter:        vips.PngFilterNone,
			Interlace:     out.Progressive,
			StripMetadata: out.Strip,
		}
		if out.LevelSet {
			// compress level: tens digit = zlib level, ones digit = filter.
			p.Compression = min(out.Level/10, 9)
			p.Filter = pngFilters[out.Level%10]
		}
		buf, _, err = img.ExportPng(p)
	case "gif":
		p := vips.NewGifExportParams()
		p.StripMetadata = out.Strip
		p.Effort = *e.cfg.Effort.GIF
		buf, _, err = img.ExportGIF(p)
	case "webp":
		p := vips.NewWebpExportParams()
		p.Quality = webpQuality
		if out.LevelSet {
			p.Quality = max(out.Level, 1)
		}
		p.ReductionEffort = *e.cfg.Effort.WebP
		p.StripMetadata = out.Strip
		buf, _, err = img.ExportWebp(p)
	case "avif":
		// govips passes effort to libvips only together with a bit depth.
		effort := pick(out.Searched, *e.cfg.Effort.AVIFAuto, *e.cfg.Effort.AVIF)
		p := &vips.AvifExportParams{Quality: avifQuality, Bitdepth: 8, Effort: effort, StripMetadata: out.Strip}
		if out.LevelSet {
			p.Quality = max(out.Level, 1)
		}
		buf, _, err = img.ExportAvif(p)
	case "jxl":
		q := jxlQuality
		if out.LevelSet {
			q = max(out.Level, 1)
		}
		// govips passes libjxl's distance, not the quality: the mapping is
		// cjxl's (jxlDistance), so a quality means what it means to cjxl.
		effort := pick(out.Searched, *e.cfg.Effort.JXLAuto, *e.cfg.Effort.JXL)
		p := &vips.JxlExportParams{Distance: jxlDistance(q), Effort: effort, Lossless: q >= 100}
		buf, _, err = img.ExportJxl(p)
	case "tif":
		p := vips.NewTiffExportParams()
		p.StripMetadata = out.Strip
		buf, _, err = img.ExportTiff(p)
	default:
		return nil, invalidf("Unsupported output format: %q", out.Format)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: encode %s: %w", out.Format, err)
	}
	return buf, nil
}

// pick is auto when searched (auto quality's encodes), else fixed.
func pick(searched bool, auto, fixed int) int {
	if searched {
		return auto
	}
	return fixed
}

// jxlDistance maps a quality 1..100 to libjxl's Butteraugli distance as
// cjxl's --quality does: 100 is lossless (0), 90 is 1.0 ("visually
// lossless"), 75 is 2.35.
func jxlDistance(q int) float64 {
	switch {
	case q >= 100:
		return 0
	case q >= 30:
		return 0.1 + float64(100-q)*0.09
	default:
		return 6.4 + math.Pow(2.5, float64(30-q)/5)/6.25
	}
}
