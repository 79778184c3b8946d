package engine

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// newTestEngine returns an engine with default limits.
func newTestEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// testPicture draws a deterministic w x h picture whose orientation is
// visible: a red/green gradient, a red block top-left, a blue block
// bottom-right and a white diagonal. With alpha, a transparent band runs
// across the middle and the edges fade.
func testPicture(w, h int, alpha bool) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBA{R: uint8(x * 255 / w), G: uint8(y * 255 / h), B: 96, A: 255}
			switch {
			case x < w/4 && y < h/4:
				c = color.NRGBA{R: 230, G: 20, B: 20, A: 255}
			case x >= w*3/4 && y >= h*3/4:
				c = color.NRGBA{R: 20, G: 20, B: 230, A: 255}
			case abs(x*h-y*w) < 2*max(w, h):
				c = color.NRGBA{R: 255, G: 255, B: 255, A: 255}
			}
			if alpha && y > h*2/5 && y < h*3/5 {
				c.A = 0
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// encodePicture encodes img as ext (png, jpg, gif, webp, tif).
func encodePicture(t testing.TB, img image.Image, ext string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if ext == "png" {
		return buf.Bytes()
	}
	ref, err := vips.NewImageFromBuffer(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	var out []byte
	switch ext {
	case "jpg":
		out, _, err = ref.ExportJpeg(&vips.JpegExportParams{Quality: 90})
	case "gif":
		out, _, err = ref.ExportGIF(vips.NewGifExportParams())
	case "webp":
		out, _, err = ref.ExportWebp(vips.NewWebpExportParams())
	case "tif":
		out, _, err = ref.ExportTiff(vips.NewTiffExportParams())
	default:
		t.Fatalf("encodePicture: unknown ext %q", ext)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// source returns an encoded test picture.
func source(t testing.TB, w, h int, ext string, alpha bool) []byte {
	t.Helper()
	return encodePicture(t, testPicture(w, h, alpha), ext)
}

// run parses ts and processes src, failing the test on any error.
func run(t testing.TB, e *Engine, src []byte, format string, env Env, ts ...string) *Result {
	t.Helper()
	c, err := e.ParseChain(ts)
	if err != nil {
		t.Fatalf("ParseChain(%q): %v", ts, err)
	}
	res, err := e.Process(context.Background(), src, Request{Chain: c, Format: format, Env: env})
	if err != nil {
		t.Fatalf("Process(%q): %v", ts, err)
	}
	return res
}

// pixel returns the RGBA value at (x, y) of encoded bytes.
func pixel(t testing.TB, encoded []byte, x, y int) color.NRGBA {
	t.Helper()
	img := decodeRGBA(t.(*testing.T), encoded)
	return img.NRGBAAt(x, y)
}

// near reports whether two colours differ by at most tol per channel.
func near(a, b color.NRGBA, tol int) bool {
	return abs(int(a.R)-int(b.R)) <= tol && abs(int(a.G)-int(b.G)) <= tol &&
		abs(int(a.B)-int(b.B)) <= tol && abs(int(a.A)-int(b.A)) <= tol
}

func asError(err error, target **Error) bool { return errors.As(err, target) }

// mustLoad opens encoded bytes with libvips.
func mustLoad(t testing.TB, data []byte) *vips.ImageRef {
	t.Helper()
	ref, err := vips.NewImageFromBuffer(data)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}
