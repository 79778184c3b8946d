package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"testing"
)

func TestPixelate(t *testing.T) {
	t.Parallel()
	red := color.NRGBA{255, 0, 0, 255}
	blue := color.NRGBA{0, 0, 255, 255}
	clear := color.NRGBA{0, 255, 0, 0}
	cases := []struct {
		name string
		size int
		in   [][]color.NRGBA // rows
		want [][]color.NRGBA
	}{
		{
			name: "blocks average",
			size: 2,
			in:   [][]color.NRGBA{{red, blue, red, red}, {blue, red, red, red}},
			want: [][]color.NRGBA{
				{{128, 0, 128, 255}, {128, 0, 128, 255}, red, red},
				{{128, 0, 128, 255}, {128, 0, 128, 255}, red, red},
			},
		},
		{
			name: "transparent pixels lend alpha, not colour",
			size: 2,
			in:   [][]color.NRGBA{{red, clear}, {clear, clear}},
			want: [][]color.NRGBA{{{255, 0, 0, 64}, {255, 0, 0, 64}}, {{255, 0, 0, 64}, {255, 0, 0, 64}}},
		},
		{
			name: "wholly transparent keeps the plain average",
			size: 2,
			in:   [][]color.NRGBA{{clear, {0, 0, 255, 0}}},
			want: [][]color.NRGBA{{{0, 128, 128, 0}, {0, 128, 128, 0}}},
		},
		{
			name: "edge blocks are smaller",
			size: 2,
			in:   [][]color.NRGBA{{red, red, blue}, {red, red, blue}, {blue, red, red}},
			want: [][]color.NRGBA{{red, red, blue}, {red, red, blue}, {{128, 0, 128, 255}, {128, 0, 128, 255}, red}},
		},
		{
			name: "size 1 changes nothing",
			size: 1,
			in:   [][]color.NRGBA{{red, blue}},
			want: [][]color.NRGBA{{red, blue}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			img := image.NewNRGBA(image.Rect(0, 0, len(c.in[0]), len(c.in)))
			for y, row := range c.in {
				for x, px := range row {
					img.SetNRGBA(x, y, px)
				}
			}
			pixelate(img, c.size)
			for y, row := range c.want {
				for x, want := range row {
					if got := img.NRGBAAt(x, y); got != want {
						t.Errorf("(%d,%d) = %v, want %v", x, y, got, want)
					}
				}
			}
		})
	}
}

// A sub-image is pixelated from its own corner, leaving the rest alone.
func TestPixelateSubImage(t *testing.T) {
	t.Parallel()
	img := image.NewNRGBA(image.Rect(0, 0, 4, 1))
	for x, v := range []uint8{10, 20, 30, 40} {
		img.SetNRGBA(x, 0, color.NRGBA{v, v, v, 255})
	}
	pixelate(img.SubImage(image.Rect(1, 0, 3, 1)).(*image.NRGBA), 2)
	for x, want := range []uint8{10, 25, 25, 40} {
		if got := img.NRGBAAt(x, 0).R; got != want {
			t.Errorf("x=%d: %d, want %d", x, got, want)
		}
	}
}

// TestPixelateMatchesReference checks the unrolled loops (four pixels per
// iteration, then the rest) against a plain per-pixel reference, on blocks
// wider than four pixels with remainders, and partial blocks at the edges.
func TestPixelateMatchesReference(t *testing.T) {
	t.Parallel()
	for _, size := range []int{3, 5, 7, 16} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			img := image.NewNRGBA(image.Rect(0, 0, 37, 23))
			seed := uint32(size)
			for i := range img.Pix {
				seed = seed*1664525 + 1013904223
				img.Pix[i] = uint8(seed >> 24)
			}
			want := image.NewNRGBA(img.Rect)
			copy(want.Pix, img.Pix)
			referencePixelate(want, size)
			pixelate(img, size)
			if !bytes.Equal(img.Pix, want.Pix) {
				t.Fatalf("size %d: pixels differ from the reference", size)
			}
		})
	}
}

// referencePixelate is pixelate written one pixel per loop iteration.
func referencePixelate(img *image.NRGBA, size int) {
	b := img.Rect
	for y0 := b.Min.Y; y0 < b.Max.Y; y0 += size {
		for x0 := b.Min.X; x0 < b.Max.X; x0 += size {
			r := image.Rect(x0, y0, min(x0+size, b.Max.X), min(y0+size, b.Max.Y))
			var sr, sg, sb, sa, pr, pg, pb uint64
			n := uint64(r.Dx() * r.Dy())
			for y := r.Min.Y; y < r.Max.Y; y++ {
				for x := r.Min.X; x < r.Max.X; x++ {
					p := img.Pix[img.PixOffset(x, y):]
					a := uint64(p[3])
					sr, sg, sb, sa = sr+uint64(p[0])*a, sg+uint64(p[1])*a, sb+uint64(p[2])*a, sa+a
					pr, pg, pb = pr+uint64(p[0]), pg+uint64(p[1]), pb+uint64(p[2])
				}
			}
			c := [4]uint8{uint8((pr + n/2) / n), uint8((pg + n/2) / n), uint8((pb + n/2) / n), 0}
			if sa != 0 {
				c = [4]uint8{uint8((sr + sa/2) / sa), uint8((sg + sa/2) / sa), uint8((sb + sa/2) / sa), uint8((sa + n/2) / n)}
			}
			for y := r.Min.Y; y < r.Max.Y; y++ {
				for x := r.Min.X; x < r.Max.X; x++ {
					copy(img.Pix[img.PixOffset(x, y):], c[:])
				}
			}
		}
	}
}
