// Command duotone is a vitrine transformation that maps an image's tones onto
// a gradient from a dark to a light colour:
//
//	t[]=duotone:dark=222244,light=ffeecc,mix=0.8
package main

import (
	"image"
	"image/color"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
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
	w := 4 * img.Rect.Dx()
	for y := range img.Rect.Dy() {
		row := img.Pix[y*img.Stride : y*img.Stride+w]
		// Sixteen pixels per iteration, then the rest one by one: the host
		// checks for a timeout at every loop back-edge, so fewer, longer
		// iterations run faster (see "Performance" in the SDK's README).
		if m == 256 {
			for ; len(row) >= 64; row = row[64:] {
				q := (*[64]byte)(row)
				tone(q[0:4], &lut)
				tone(q[4:8], &lut)
				tone(q[8:12], &lut)
				tone(q[12:16], &lut)
				tone(q[16:20], &lut)
				tone(q[20:24], &lut)
				tone(q[24:28], &lut)
				tone(q[28:32], &lut)
				tone(q[32:36], &lut)
				tone(q[36:40], &lut)
				tone(q[40:44], &lut)
				tone(q[44:48], &lut)
				tone(q[48:52], &lut)
				tone(q[52:56], &lut)
				tone(q[56:60], &lut)
				tone(q[60:64], &lut)
			}
			for ; len(row) >= 4; row = row[4:] {
				tone(row, &lut)
			}
			continue
		}
		for ; len(row) >= 64; row = row[64:] {
			q := (*[64]byte)(row)
			blend(q[0:4], &lut, m)
			blend(q[4:8], &lut, m)
			blend(q[8:12], &lut, m)
			blend(q[12:16], &lut, m)
			blend(q[16:20], &lut, m)
			blend(q[20:24], &lut, m)
			blend(q[24:28], &lut, m)
			blend(q[28:32], &lut, m)
			blend(q[32:36], &lut, m)
			blend(q[36:40], &lut, m)
			blend(q[40:44], &lut, m)
			blend(q[44:48], &lut, m)
			blend(q[48:52], &lut, m)
			blend(q[52:56], &lut, m)
			blend(q[56:60], &lut, m)
			blend(q[60:64], &lut, m)
		}
		for ; len(row) >= 4; row = row[4:] {
			blend(row, &lut, m)
		}
	}
}

// luma is the BT.601 luma of the pixel p, 0..255.
func luma(p []byte) uint8 {
	return uint8((77*uint32(p[0]) + 150*uint32(p[1]) + 29*uint32(p[2]) + 128) >> 8)
}

// tone replaces the colour of the pixel p[0:4] by its luma's on the gradient.
func tone(p []byte, lut *[3][256]uint8) {
	p = p[:4]
	l := luma(p)
	p[0], p[1], p[2] = lut[0][l], lut[1][l], lut[2][l]
}

// blend mixes the colour of the pixel p[0:4] with its luma's on the
// gradient, m/256 of the latter.
func blend(p []byte, lut *[3][256]uint8, m uint32) {
	p = p[:4]
	keep := 256 - m
	l := luma(p)
	p[0] = uint8((uint32(p[0])*keep + uint32(lut[0][l])*m + 128) >> 8)
	p[1] = uint8((uint32(p[1])*keep + uint32(lut[1][l])*m + 128) >> 8)
	p[2] = uint8((uint32(p[2])*keep + uint32(lut[2][l])*m + 128) >> 8)
}

// lerp returns the value at t/255 of the way from a to b, rounded.
func lerp(a, b uint8, t int) uint8 {
	return uint8((int(a)*(255-t) + int(b)*t + 127) / 255)
}
