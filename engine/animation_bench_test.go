package engine

import (
	"context"
	"image"
	"image/color"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// BenchmarkAnimatedGIFResize resizes a 200x200, 10-frame GIF to 100 pixels
// wide, written as GIF and as animated WebP (one goroutine: the cost of one
// request).
func BenchmarkAnimatedGIFResize(b *testing.B) {
	strip := image.NewNRGBA(image.Rect(0, 0, 200, 2000))
	for y := 0; y < 2000; y++ {
		for x := 0; x < 200; x++ {
			f := y / 200
			strip.SetNRGBA(x, y, color.NRGBA{uint8(x + 5*f), uint8(y % 200), uint8(25 * f), 255})
		}
	}
	ref, err := vips.NewImageFromGoImage(strip)
	if err != nil {
		b.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return ref.SetPages(10) },
		func() error { return ref.SetPageHeight(200) },
		func() error { return ref.SetPageDelay([]int{80, 80, 80, 80, 80, 80, 80, 80, 80, 80}) },
	} {
		if err := step(); err != nil {
			b.Fatal(err)
		}
	}
	src, _, err := ref.ExportGIF(vips.NewGifExportParams())
	ref.Close()
	if err != nil {
		b.Fatal(err)
	}
	e := newTestEngine(b, Config{})
	chain, err := e.ParseChain([]string{"resize:width=100"})
	if err != nil {
		b.Fatal(err)
	}
	for _, format := range []string{"gif", "webp"} {
		b.Run(format, func(b *testing.B) {
			req := Request{Chain: chain, Format: format, Source: Info{Mime: "image/gif", Ext: "gif", Width: 200, Height: 200}}
			b.SetBytes(int64(len(src)))
			for i := 0; i < b.N; i++ {
				if _, err := e.Process(context.Background(), src, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
