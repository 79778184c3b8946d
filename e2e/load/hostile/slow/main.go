// Command slow is the legitimate but slow guest of e2e/load/hostile.sh: a
// transformation that blurs the image horizontally (a 3-pixel box) passes
// times, real pixel work that takes about half a second on a 1080p image at
// the default 2 passes on an idle 2-core machine (about 0.2 s a pass, the
// rest decoding, copying and the thumbnail), and returns well before its
// manifest's 10 s timeout.
package main

import (
	"image"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
)

func init() {
	vitrine.Transformation(transform)
}

// main is not called: the module is a reactor, and init registers the work.
func main() {}

func transform(img *image.NRGBA, p vitrine.Params) (*image.NRGBA, error) {
	passes, err := p.Int("passes")
	if err != nil {
		return nil, err
	}
	for range passes {
		blur(img)
	}
	return img, nil
}

// blur replaces each colour sample of the interior by the mean of itself and
// its two horizontal neighbours', in place, one row at a time; alpha and
// the first and last columns are kept.
func blur(img *image.NRGBA) {
	w := img.Rect.Dx()
	for y := range img.Rect.Dy() {
		row := img.Pix[y*img.Stride : y*img.Stride+4*w]
		for c := range 3 {
			prev := uint32(row[c])
			for x := 1; x < w-1; x++ {
				i := 4*x + c
				cur := uint32(row[i])
				row[i] = uint8((prev + cur + uint32(row[i+4]) + 1) / 3)
				prev = cur
			}
		}
	}
}
