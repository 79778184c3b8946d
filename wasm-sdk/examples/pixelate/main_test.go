package main

import (
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
