package engine

import (
	"github.com/davidbyttow/govips/v2/vips"
)

// An auto-quality search on an image larger than a proxy encodes and
// scores the proxy, and encodes the image itself once, at the quality the
// proxy's search found. The proxy is a mosaic of nine 128-pixel squares of
// the image at full resolution, so that an encoder's artifacts are the
// size they are in the output, for JPEG, AVIF and JPEG XL; for WebP, whose
// encoder reacts to the mosaic's seams, the image downscaled to 384 pixels.
// The proxy's score plus the format's offset predicts the image's (e2e/README.md,
// Perceptual quality: measurements, for the measured spread).
const (
	mosaicTile = 128
	mosaicCols = 3
	mosaicRows = 3
	proxySide  = 384
)

// proxyOffsets are the mean differences between an output's SSIMULACRA 2
// score at full size and its proxy's at the same quality, by format, over
// the byte benchmark's images at 1200 pixels wide and qualities 40-92.
var proxyOffsets = map[string]float64{"jpg": -1.6, "avif": -1.7, "jxl": -1.6, "webp": -1.0}

// searchProxy is the image a search encodes and scores in place of the
// output, and the offset from its scores to the output's.
type searchProxy struct {
	img    *vips.ImageRef
	kind   string
	offset float64
}

// searchProxyOf returns the search proxy of img for format, or nil when
// img is small enough to search itself (less than twice the proxy's area).
func searchProxyOf(img *vips.ImageRef, format string) (*searchProxy, error) {
	w, h := img.Width(), img.Height()
	side := mosaicTile * mosaicCols
	if w < side || h < side || w*h < 2*side*side {
		return nil, nil
	}
	if format == "webp" {
		p, err := proxyOf(img, proxySide)
		if err != nil {
			return nil, err
		}
		return &searchProxy{img: p, kind: "downscaled", offset: proxyOffsets[format]}, nil
	}
	p, err := mosaicOf(img, mosaicTile, mosaicCols, mosaicRows)
	if err != nil {
		return nil, err
	}
	return &searchProxy{img: p, kind: "mosaic", offset: proxyOffsets[format]}, nil
}

// proxyOf returns a copy of img, rendered in memory, downscaled (Lanczos 3)
// so that its longest side is at most side; a copy of img as it is when it
// is already that small.
func proxyOf(img *vips.ImageRef, side int) (*vips.ImageRef, error) {
	p, err := img.Copy()
	if err != nil {
		return nil, err
	}
	if long := max(p.Width(), p.Height()); long > side {
		if err := p.Resize(float64(side)/float64(long), vips.KernelLanczos3); err != nil {
			p.Close()
			return nil, err
		}
	}
	if err := copyMemory(p); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// mosaicOf returns a cols x rows mosaic of tile x tile squares of img,
// taken from an evenly spaced grid over it, rendered in memory. tile is a
// multiple of 16 and the squares start at multiples of 16, so that an
// encoder's blocks (8x8 or 16x16 from the top left) fall within one square
// in the image and in the mosaic alike.
func mosaicOf(img *vips.ImageRef, tile, cols, rows int) (*vips.ImageRef, error) {
	w, h := img.Width(), img.Height()
	m, err := img.Copy()
	if err != nil {
		return nil, err
	}
	if err := m.ExtractArea(0, 0, tile*cols, tile*rows); err != nil {
		m.Close()
		return nil, err
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			x := (w - tile) * (2*c + 1) / (2 * cols) / 16 * 16
			y := (h - tile) * (2*r + 1) / (2 * rows) / 16 * 16
			t, err := img.Copy()
			if err == nil {
				if err = t.ExtractArea(x, y, tile, tile); err == nil {
					err = m.Insert(t, c*tile, r*tile, false, nil)
				}
				t.Close()
			}
			if err != nil {
				m.Close()
				return nil, err
			}
		}
	}
	if err := copyMemory(m); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}
