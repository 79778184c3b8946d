// Command duotone is a vitrine transformation that maps an image's tones onto
// a gradient from a dark to a light colour:
//
//	t[]=duotone:dark=222244,light=ffeecc,mix=0.8
package main

import (
	"image"
	"image/color"

	vitrine "vitrine/wasm-sdk"
)

func init() {
	vitrine.Transformation(transform)
}

// main is not called: the module is a reactor, and init registers the work.
func main() {}

// transform reads the parameters and applies duotone in place. The manifest
// gives each parameter a default, so none is ever absent.
func transform(img *image.NRGBA, p vitrine.Params) (*image.NRGBA, error) {
	dark, err := p.Color("dark")
	if err != nil {
		return nil, err
	}
	light, err := p.Color("light")
	if err != nil {
		return nil, err
	}
	mix, err := p.Number("mix")
	if err != nil {
		return nil, err
	}
	duotone(img, dark, light, mix)
	return img, nil
}

// duotone replaces each pixel by the colour its luma (BT.601 weights on the
// sRGB values) takes on the gradient from dark to light, blended over the
// original by mix: 0 keeps the image, 1 is pure duotone. The alpha of the
// image is kept; the alpha of dark and light is ignored.
func duotone(img *image.NRGBA, dark, light color.NRGBA, mix float64) {
	// One lookup table per channel from luma to the blended-in colour, so the
	// loop over pixels is a few multiplications and three lookups.
	var lut [3][256]uint8
	for y := range 256 {
		lut[0][y] = lerp(dark.R, light.R, y)
		lut[1][y] = lerp(dark.G, light.G, y)
		lut[2][y] = lerp(dark.B, light.B, y)
	}
	m := uint32(min(max(mix, 0), 1)*256 + 0.5) // the weight of the duotone, 0..256
	keep := 256 - m
	w := 4 * img.Rect.Dx()
	for y := range img.Rect.Dy() {
		row := img.Pix[y*img.Stride : y*img.Stride+w]
		if m == 256 {
			for ; len(row) >= 4; row = row[4:] {
				l := (77*uint32(row[0]) + 150*uint32(row[1]) + 29*uint32(row[2]) + 128) >> 8
				row[0], row[1], row[2] = lut[0][l], lut[1][l], lut[2][l]
			}
			continue
		}
		for ; len(row) >= 4; row = row[4:] {
			r, g, b := uint32(row[0]), uint32(row[1]), uint32(row[2])
			l := (77*r + 150*g + 29*b + 128) >> 8
			row[0] = uint8((r*keep + uint32(lut[0][l])*m + 128) >> 8)
			row[1] = uint8((g*keep + uint32(lut[1][l])*m + 128) >> 8)
			row[2] = uint8((b*keep + uint32(lut[2][l])*m + 128) >> 8)
		}
	}
}

// lerp returns the value at t/255 of the way from a to b, rounded.
func lerp(a, b uint8, t int) uint8 {
	return uint8((int(a)*(255-t) + int(b)*t + 127) / 255)
}
