// Command pixelate is a vitrine transformation that turns an image into
// blocks of one colour each:
//
//	t[]=pixelate:size=16
package main

import (
	"image"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
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
		// Four pixels per iteration, then the rest one by one: the host
		// checks for a timeout at every loop back-edge (see "Performance"
		// in the SDK's README).
		for ; len(row) >= 16; row = row[16:] {
			q := (*[16]byte)(row)
			r0, g0, b0, a0 := channels(q[0:4])
			r1, g1, b1, a1 := channels(q[4:8])
			r2, g2, b2, a2 := channels(q[8:12])
			r3, g3, b3, a3 := channels(q[12:16])
			sr += r0*a0 + r1*a1 + r2*a2 + r3*a3
			sg += g0*a0 + g1*a1 + g2*a2 + g3*a3
			sb += b0*a0 + b1*a1 + b2*a2 + b3*a3
			sa += a0 + a1 + a2 + a3
			pr += r0 + r1 + r2 + r3
			pg += g0 + g1 + g2 + g3
			pb += b0 + b1 + b2 + b3
		}
		for ; len(row) >= 4; row = row[4:] {
			r, g, b, a := channels(row)
			sr += r * a
			sg += g * a
			sb += b * a
			sa += a
			pr += r
			pg += g
			pb += b
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

// channels returns the four channels of the pixel p[0:4].
func channels(p []byte) (r, g, b, a uint64) {
	p = p[:4]
	return uint64(p[0]), uint64(p[1]), uint64(p[2]), uint64(p[3])
}

// fill sets every pixel of r to c: it sets the first pixel of each row and
// doubles what is set with copy, a few iterations per row rather than one
// per pixel.
func fill(img *image.NRGBA, r image.Rectangle, c [4]uint8) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		i := img.PixOffset(r.Min.X, y)
		row := img.Pix[i : i+4*r.Dx()]
		done := copy(row, c[:])
		for done < len(row) {
			done += copy(row[done:], row[:done])
		}
	}
}
