package engine

import (
	"bytes"
	"context"
	"errors"
	"image/color"
	"testing"
)

func TestProcessNoOpReturnsSource(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := source(t, 64, 48, "jpg", false)
	for _, format := range []string{"", "jpg"} {
		res, err := e.Process(context.Background(), src, Request{Format: format})
		if err != nil {
			t.Fatal(err)
		}
		if &res.Data[0] != &src[0] || len(res.Data) != len(src) {
			t.Errorf("format %q: bytes were re-encoded", format)
		}
		if res.Mime != "image/jpeg" || res.Ext != "jpg" || res.Width != 64 || res.Height != 48 {
			t.Errorf("format %q: result %+v", format, Result{Mime: res.Mime, Ext: res.Ext, Width: res.Width, Height: res.Height})
		}
	}
}

func TestProcessFormats(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := source(t, 64, 48, "png", true)
	tests := []struct {
		format string
		ts     []string
		mime   string
		magic  []byte
	}{
		{format: "jpg", mime: "image/jpeg", magic: []byte{0xFF, 0xD8}},
		{format: "gif", mime: "image/gif", magic: []byte("GIF8")},
		{format: "webp", mime: "image/webp", magic: []byte("RIFF")},
		{format: "avif", mime: "image/avif", magic: nil},
		{format: "jxl", mime: "image/jxl", magic: []byte{0xFF, 0x0A}},
		{ts: []string{"convert:type=jxl"}, mime: "image/jxl", magic: []byte{0xFF, 0x0A}},
		{ts: []string{"convert:type=webp"}, mime: "image/webp", magic: []byte("RIFF")},
		{ts: []string{"convert:type=gif"}, format: "png", mime: "image/png", magic: []byte("\x89PNG")}, // the path wins
		{ts: []string{"strip"}, mime: "image/png", magic: []byte("\x89PNG")},
	}
	for _, tc := range tests {
		t.Run(tc.mime+tc.format, func(t *testing.T) {
			t.Parallel()
			res := run(t, e, src, tc.format, Env{}, tc.ts...)
			if res.Mime != tc.mime {
				t.Errorf("mime %q, want %q", res.Mime, tc.mime)
			}
			if tc.magic != nil && !bytes.HasPrefix(res.Data, tc.magic) {
				t.Errorf("data starts % x", res.Data[:8])
			}
			if res.Width != 64 || res.Height != 48 {
				t.Errorf("size %dx%d", res.Width, res.Height)
			}
		})
	}
	if _, err := e.Process(context.Background(), src, Request{Format: "bmp"}); KindOf(err) != KindInvalid {
		t.Errorf("format bmp: %v", err)
	}
}

// TestTransparentToJPEGIsWhite: a transparent PNG served as JPEG shows white
// where it was transparent, not black.
func TestTransparentToJPEGIsWhite(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := source(t, 100, 100, "png", true) // rows 41-59 transparent
	for _, ts := range [][]string{nil, {"resize:width=50"}} {
		res := run(t, e, src, "jpg", Env{}, ts...)
		y := res.Height / 2
		if got := pixel(t, res.Data, res.Width/3, y); !near(got, color.NRGBA{255, 255, 255, 255}, 6) {
			t.Errorf("%v: transparent area became %v, want white", ts, got)
		}
	}
}

func TestProcessEncoderOptions(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := source(t, 200, 150, "jpg", false)
	low := run(t, e, src, "", Env{}, "compress:level=10")
	high := run(t, e, src, "", Env{}, "compress:level=95")
	if len(low.Data) >= len(high.Data) {
		t.Errorf("compress level 10 gave %d bytes, level 95 %d", len(low.Data), len(high.Data))
	}
	zero := run(t, e, src, "", Env{}, "compress:level=0")
	if len(zero.Data) > len(low.Data) {
		t.Errorf("compress level 0 (%d bytes) is bigger than level 10 (%d)", len(zero.Data), len(low.Data))
	}
	prog := run(t, e, src, "", Env{}, "progressive")
	if !bytes.Contains(prog.Data, []byte{0xFF, 0xC2}) {
		t.Error("progressive JPEG has no SOF2 marker")
	}
	plain := run(t, e, src, "", Env{}, "flipVertically")
	if bytes.Contains(plain.Data, []byte{0xFF, 0xC2}) {
		t.Error("baseline JPEG has a SOF2 marker")
	}
	png := source(t, 200, 150, "png", false)
	fast := run(t, e, png, "", Env{}, "compress:level=10")
	best := run(t, e, png, "", Env{}, "compress:level=95")
	if len(best.Data) >= len(fast.Data) {
		t.Errorf("png compress 95 gave %d bytes, 10 gave %d", len(best.Data), len(fast.Data))
	}
	inter := run(t, e, png, "", Env{}, "progressive")
	if ihdr := bytes.Index(inter.Data, []byte("IHDR")); ihdr < 0 || inter.Data[ihdr+16] != 1 {
		t.Error("progressive PNG is not interlaced")
	}
}

func TestProcessPixels(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	red := color.NRGBA{230, 20, 20, 255}
	src := source(t, 200, 100, "png", false) // red block top-left
	tests := []struct {
		ts   []string
		x, y int
		want color.NRGBA
	}{
		{[]string{"rotate:angle=90"}, 90, 10, red},   // clockwise: top-left goes top-right
		{[]string{"rotate:angle=-90"}, 10, 190, red}, // counter-clockwise: bottom-left
		{[]string{"rotate:angle=270"}, 10, 190, red},
		{[]string{"flipHorizontally"}, 190, 10, red},
		{[]string{"flipVertically"}, 10, 90, red},
		{[]string{"transpose"}, 10, 10, red},
		{[]string{"transverse"}, 90, 190, red},
		{[]string{"border:width=10,height=10,color=0f0"}, 5, 5, color.NRGBA{0, 255, 0, 255}},
		{[]string{"border:width=10,height=10,color=0f0"}, 15, 15, red},
		{[]string{"border:width=10,height=10,color=0f0,mode=inline"}, 195, 95, color.NRGBA{0, 255, 0, 255}},
		{[]string{"border:width=10,height=10,color=0f0,mode=inline"}, 15, 15, red},
		{[]string{"canvas:width=300,height=200,x=50,y=20,bg=00f"}, 10, 10, color.NRGBA{0, 0, 255, 255}},
		{[]string{"canvas:width=300,height=200,x=50,y=20,bg=00f"}, 55, 25, red},
		{[]string{"canvas:width=300,height=200,x=-20,y=-10,bg=00f"}, 5, 5, red},
		{[]string{"canvas:width=300,height=200,mode=center,bg=00f"}, 55, 55, red},
		{[]string{"rotate:angle=45,bg=ff0"}, 2, 2, color.NRGBA{255, 255, 0, 255}},
		{[]string{"crop:width=20,height=20"}, 10, 10, red},
	}
	for _, tc := range tests {
		t.Run(tc.ts[0], func(t *testing.T) {
			t.Parallel()
			res := run(t, e, src, "png", Env{}, tc.ts...)
			if got := pixel(t, res.Data, tc.x, tc.y); !near(got, tc.want, 8) {
				t.Errorf("pixel (%d,%d) = %v, want %v", tc.x, tc.y, got, tc.want)
			}
		})
	}
}

// TestBorderBehat is Imbo's check: 512x512, inline 100x100 border;
// (413,413) is border, (114,114) is the original.
func TestBorderBehat(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := encodePicture(t, fxSolid(512, 512, color.NRGBA{0, 0, 255, 255}), "png")
	res := run(t, e, src, "", Env{}, "border:width=100,height=100,mode=inline,color=fff")
	if res.Width != 512 || res.Height != 512 {
		t.Fatalf("size %dx%d", res.Width, res.Height)
	}
	if got := pixel(t, res.Data, 413, 413); got != (color.NRGBA{255, 255, 255, 255}) {
		t.Errorf("(413,413) = %v, want border", got)
	}
	if got := pixel(t, res.Data, 114, 114); got != (color.NRGBA{0, 0, 255, 255}) {
		t.Errorf("(114,114) = %v, want original", got)
	}
}

func TestProcessErrors(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{Limits: Limits{MaxPixels: 1_000_000}})
	src := source(t, 100, 50, "png", false)
	parse := func(ts ...string) Chain {
		c, err := e.ParseChain(ts)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		name string
		ctx  func() context.Context
		c    Chain
		kind Kind
		msg  string
	}{
		{name: "crop x", c: parse("crop:width=60,height=10,x=50"), kind: KindInvalid, msg: "crop: Crop area is out of bounds (`x` + `width` > image width)"},
		{name: "crop y", c: parse("crop:width=10,height=60"), kind: KindInvalid, msg: "crop: Crop area is out of bounds (`y` + `height` > image height)"},
		{name: "crop center too wide", c: parse("crop:width=101,height=10,mode=center"), kind: KindInvalid, msg: "crop: Crop area is out of bounds (`x` + `width` > image width)"},
		{name: "smartSize too small", c: parse("smartSize:width=300,height=300"), kind: KindInvalid},
		{name: "enlarge past limits", c: parse("resize:width=5000"), kind: KindTooLarge, msg: "Image too large: 5000x2500 pixels; the limits are 32768x32768 and 1000000 pixels in all"},
		{name: "cancelled", c: parse("flipVertically"), ctx: func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			_, err := e.Process(ctx, src, Request{Chain: tc.c})
			if err == nil {
				t.Fatal("no error")
			}
			if tc.ctx != nil {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
				return
			}
			var ee *Error
			if KindOf(err) != tc.kind || !errors.As(err, &ee) || (tc.msg != "" && ee.Msg != tc.msg) {
				t.Errorf("err = %v (kind %v), want %q kind %v", err, KindOf(err), tc.msg, tc.kind)
			}
		})
	}
}

func TestSmartSizeHeader(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := source(t, 400, 300, "png", false)
	tests := []struct {
		env  Env
		ts   string
		want string
	}{
		{Env{}, "smartSize:width=100,height=100", "0"},
		{Env{}, "smartSize:width=100,height=100,poi=50,50", "1"},
		{Env{Metadata: map[string]any{"poi": []any{map[string]any{"cx": 50, "cy": 50}}}}, "smartSize:width=100,height=100", "1"},
		{Env{Metadata: map[string]any{"poi": []any{map[string]any{"x": 10, "y": 10, "width": 80, "height": 80}}}}, "smartSize:width=100,height=100", "1"},
		{Env{Metadata: map[string]any{"poi": []any{map[string]any{"x": 50.0, "y": 50.0}}}}, "smartSize:width=100,height=100", "1"},
		{Env{Metadata: map[string]any{"poi": "nonsense"}}, "smartSize:width=100,height=100", "0"},
		{Env{Metadata: map[string]any{"poi": []any{}}}, "smartSize:width=100,height=100", "0"},
	}
	for _, tc := range tests {
		res := run(t, e, src, "", tc.env, tc.ts)
		if res.Headers["POIs-Used"] != tc.want || res.Width != 100 || res.Height != 100 {
			t.Errorf("%s %v: POIs-Used=%q %dx%d, want %q 100x100", tc.ts, tc.env.Metadata, res.Headers["POIs-Used"], res.Width, res.Height, tc.want)
		}
	}
	// The POI is the red block's centre: a close crop is all red.
	res := run(t, e, src, "png", Env{}, "smartSize:width=40,height=40,poi=50,37,crop=close")
	if got := pixel(t, res.Data, 20, 20); !near(got, color.NRGBA{230, 20, 20, 255}, 8) {
		t.Errorf("close crop around the red block: centre is %v", got)
	}
}

func TestAutoRotate(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	// A JPEG with EXIF orientation 6 (rotate 90 clockwise to view).
	src := source(t, 200, 100, "jpg", false)
	ref := mustLoad(t, src)
	if err := ref.SetOrientation(6); err != nil {
		t.Fatal(err)
	}
	oriented, _, err := ref.ExportJpeg(nil)
	ref.Close()
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, e, oriented, "png", Env{}, "autoRotate")
	if res.Width != 100 || res.Height != 200 {
		t.Fatalf("size %dx%d, want 100x200", res.Width, res.Height)
	}
	if got := pixel(t, res.Data, 90, 10); !near(got, color.NRGBA{230, 20, 20, 255}, 12) {
		t.Errorf("red block not top-right after rotating: %v", got)
	}
	plain := run(t, e, src, "", Env{}, "autoRotate")
	if plain.Width != 200 || plain.Height != 100 {
		t.Errorf("no orientation: size %dx%d", plain.Width, plain.Height)
	}
}
