package engine

import (
	"image/color"
	"testing"
)

func TestCanvasTransparent(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := source(t, 40, 30, "png", false)
	for _, c := range []struct {
		format string
		corner color.NRGBA
	}{
		{"png", color.NRGBA{}},
		{"webp", color.NRGBA{}},
		{"gif", color.NRGBA{}},
		{"jpg", color.NRGBA{255, 255, 255, 255}}, // JPEG has no alpha: white
	} {
		t.Run(c.format, func(t *testing.T) {
			res := run(t, e, src, c.format, Env{}, "canvas:width=80,height=60,mode=center,bg=none")
			if res.Width != 80 || res.Height != 60 {
				t.Fatalf("size %dx%d", res.Width, res.Height)
			}
			img := decodeRGBA(t, res.Data)
			if got := img.NRGBAAt(2, 2); got.A != c.corner.A || (c.corner.A != 0 && !near(got, c.corner, 2)) {
				t.Errorf("corner %v, want %v", got, c.corner)
			}
			// The red block of the picture, now at (20, 15) + (2, 2).
			if got := img.NRGBAAt(22, 17); !near(got, color.NRGBA{230, 20, 20, 255}, 20) {
				t.Errorf("image pixel %v, want opaque red", got)
			}
		})
	}
}
