// Command invert is a vitrine transformation that inverts the colours of the
// image, keeping its alpha; with the parameter alpha=true it inverts the
// alpha channel too. The same filter is written in C (invert-c), Rust and
// AssemblyScript (wasm-sdk/rust/examples/invert,
// wasm-sdk/assemblyscript/examples/invert), and all give the same bytes.
//
//	t[]=invert
//	t[]=invert:alpha=true
package main

import (
	"image"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
)

func init() {
	vitrine.Transformation(transform)
}

func main() {}

func transform(img *image.NRGBA, p vitrine.Params) (*image.NRGBA, error) {
	alpha, err := p.Bool("alpha")
	if err != nil {
		return nil, err
	}
	invert(img, alpha)
	return img, nil
}

// invert inverts the colour channels of img in place, and alpha too when
// alpha is set.
func invert(img *image.NRGBA, alpha bool) {
	w := 4 * img.Rect.Dx()
	for y := range img.Rect.Dy() {
		row := img.Pix[y*img.Stride : y*img.Stride+w]
		for ; len(row) >= 4; row = row[4:] {
			row[0], row[1], row[2] = 255-row[0], 255-row[1], 255-row[2]
			if alpha {
				row[3] = 255 - row[3]
			}
		}
	}
}
