package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"testing"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
)

// row returns a one-row image of the given pixels.
func row(px ...color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, len(px), 1))
	for x, c := range px {
		img.SetNRGBA(x, 0, c)
	}
	return img
}

func TestDuotone(t *testing.T) {
	t.Parallel()
	dark := color.NRGBA{0x22, 0x22, 0x44, 0xff}
	light := color.NRGBA{0xee, 0xee, 0xcc, 0xff}
	in := []color.NRGBA{
		{0, 0, 0, 255},       // black: luma 0
		{255, 255, 255, 255}, // white: luma 255
		{128, 128, 128, 64},  // grey, mostly transparent: luma 128
		{255, 0, 0, 255},     // red: luma (77*255+128)>>8 = 77, 0x60 0x60 0x6d on the gradient
	}
	cases := []struct {
		name string
		mix  float64
		want []color.NRGBA
	}{
		{"full", 1, []color.NRGBA{
			dark,
			light,
			{0x88, 0x88, 0x88, 64}, // halfway: (34*127+238*128+127)/255 = 136
			{0x60, 0x60, 0x6d, 255},
		}},
		{"none", 0, in},
		{"half", 0.5, []color.NRGBA{
			{0x11, 0x11, 0x22, 255},
			{0xf7, 0xf7, 0xe6, 255},
			{0x84, 0x84, 0x84, 64},
			{0xb0, 0x30, 0x37, 255}, // (255*128+0x60*128+128)>>8 = 0xb0 ...
		}},
		{"clamped above 1", 3, []color.NRGBA{dark, light, {0x88, 0x88, 0x88, 64}, {0x60, 0x60, 0x6d, 255}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			img := row(in...)
			duotone(img, dark, light, c.mix)
			for x, want := range c.want {
				if got := img.NRGBAAt(x, 0); got != want {
					t.Errorf("pixel %d: %v -> %v, want %v", x, in[x], got, want)
				}
			}
		})
	}
}

// transform reads its parameters in the normalised forms the host passes.
func TestTransform(t *testing.T) {
	t.Parallel()
	img := row(color.NRGBA{0, 0, 0, 255}, color.NRGBA{255, 255, 255, 255})
	p := vitrine.NewParams(map[string]string{"dark": "102030ff", "light": "f0e0d0ff", "mix": "1"})
	out, err := transform(img, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.NRGBAAt(0, 0); got != (color.NRGBA{0x10, 0x20, 0x30, 255}) {
		t.Errorf("black became %v", got)
	}
	if got := out.NRGBAAt(1, 0); got != (color.NRGBA{0xf0, 0xe0, 0xd0, 255}) {
		t.Errorf("white became %v", got)
	}
	if _, err := transform(img, vitrine.NewParams(map[string]string{"dark": "000000ff"})); err == nil {
		t.Error("transform without light and mix did not fail")
	}
}

// BenchmarkDuotone is the native baseline for the guest's speed: one
// megapixel.
func BenchmarkDuotone(b *testing.B) {
	img := image.NewNRGBA(image.Rect(0, 0, 1000, 1000))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	dark, light := color.NRGBA{0x22, 0x22, 0x44, 0xff}, color.NRGBA{0xee, 0xee, 0xcc, 0xff}
	b.SetBytes(int64(len(img.Pix)))
	for b.Loop() {
		duotone(img, dark, light, 0.8)
	}
}

// TestDuotoneMatchesReference checks the unrolled loops (sixteen pixels per
// iteration, then the rest) against a plain per-pixel reference, on rows
// that are not a multiple of sixteen pixels.
func TestDuotoneMatchesReference(t *testing.T) {
	t.Parallel()
	dark := color.NRGBA{0x22, 0x22, 0x44, 0xff}
	light := color.NRGBA{0xee, 0xee, 0xcc, 0xff}
	for _, mix := range []float64{1, 0.5, 0.2} {
		t.Run(fmt.Sprint(mix), func(t *testing.T) {
			img := image.NewNRGBA(image.Rect(0, 0, 37, 5))
			seed := uint32(mix * 100)
			for i := range img.Pix {
				seed = seed*1664525 + 1013904223
				img.Pix[i] = uint8(seed >> 24)
			}
			want := image.NewNRGBA(img.Rect)
			copy(want.Pix, img.Pix)
			m := uint32(mix*256 + 0.5)
			for i := 0; i < len(want.Pix); i += 4 {
				p := want.Pix[i : i+4]
				r, g, b := uint32(p[0]), uint32(p[1]), uint32(p[2])
				l := int((77*r + 150*g + 29*b + 128) >> 8)
				tone := [3]uint32{uint32(lerp(dark.R, light.R, l)), uint32(lerp(dark.G, light.G, l)), uint32(lerp(dark.B, light.B, l))}
				for c, v := range [3]uint32{r, g, b} {
					p[c] = uint8((v*(256-m) + tone[c]*m + 128) >> 8)
				}
			}
			duotone(img, dark, light, mix)
			if !bytes.Equal(img.Pix, want.Pix) {
				t.Fatalf("mix %v: pixels differ from the reference", mix)
			}
		})
	}
}
