// Command pixelate is a vitrine transformation that turns an image into
// blocks of one colour each:
//
//	t[]=pixelate:size=16
package main

import (
	"image"

	vitrine "vitrine/wasm-sdk"
)

func init() {
	vitrine.Transformation(func(img *image.NRGBA, p vitrine.Params) (*image.NRGBA, error) {
		size, err := p.Int("size")
		if err != nil {
			return nil, err
		}
		pixelate(img, size)
		return img, nil
	})
}

func main() {}

// pixelate replaces each size x size block of img, from the top left corner
// (the blocks of the last row and column may be smaller), by the block's
// average colour. Colours are weighted by their alpha, so a transparent pixel
// lends the block its transparency but not its colour.
func pixelate(img *image.NRGBA, size int) {
	if size < 2 {
		return
	}
	b := img.Rect
	for y0 := b.Min.Y; y0 < b.Max.Y; y0 += size {
		y1 := min(y0+size, b.Max.Y)
		for x0 := b.Min.X; x0 < b.Max.X; x0 += size {
			x1 := min(x0+size, b.Max.X)
			fill(img, image.Rect(x0, y0, x1, y1), average(img, image.Rect(x0, y0, x1, y1)))
		}
	}
}

// average returns the alpha-weighted average of the pixels of r.
func average(img *image.NRGBA, r image.Rectangle) [4]uint8 {
	var sr, sg, sb, sa, pr, pg, pb uint64
	n := uint64(r.Dx() * r.Dy())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		i := img.PixOffset(r.Min.X, y)
		row := img.Pix[i : i+4*r.Dx()]
		for ; len(row) >= 4; row = row[4:] {
			a := uint64(row[3])
			sr += uint64(row[0]) * a
			sg += uint64(row[1]) * a
			sb += uint64(row[2]) * a
			sa += a
			pr += uint64(row[0])
			pg += uint64(row[1])
			pb += uint64(row[2])
		}
	}
	if sa == 0 {
		// Wholly transparent: keep the plain average so the colour under
		// a later alpha change is not black.
		return [4]uint8{uint8((pr + n/2) / n), uint8((pg + n/2) / n), uint8((pb + n/2) / n), 0}
	}
	return [4]uint8{
		uint8((sr + sa/2) / sa), uint8((sg + sa/2) / sa), uint8((sb + sa/2) / sa),
		uint8((sa + n/2) / n),
	}
}

// fill sets every pixel of r to c.
func fill(img *image.NRGBA, r image.Rectangle, c [4]uint8) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		i := img.PixOffset(r.Min.X, y)
		row := img.Pix[i : i+4*r.Dx()]
		for ; len(row) >= 4; row = row[4:] {
			copy(row, c[:])
		}
	}
}
