package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// FuzzParseSpec parses arbitrary t[] elements, alone and as a chain: nothing
// may panic, every rejection must be a typed KindInvalid error, and an
// accepted spec must render to a key that parses back to the same spec.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"thumbnail", "thumbnail:width=100,height=100,fit=inset", "smartSize:poi=410,310,crop=close,width=5,height=5",
		"crop:width=10,height=10,x=-1", "resize:width=0", ":", "a:b", "rotate:angle=1e400", "contrast:sharpen:-1",
		"border:color=#fff,width=,height=2", "canvas:bg=none", "compress:level=100", "x:=1,=2,y==3", "maxSize:width=99999999999999999999",
	} {
		f.Add(s)
	}
	e, err := New(Config{Presets: map[string][]string{"p": {"thumbnail:width=10", "strip"}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp := ParseSpec(s)
		if again := ParseSpec(sp.String()); again.Name != sp.Name || len(again.Params) != len(sp.Params) {
			// Values containing `,name=` cannot round-trip; only check
			// the simple ones.
			simple := true
			for _, v := range sp.Params {
				if paramStart.MatchString("," + v) {
					simple = false
				}
			}
			if simple && sp.Name != "" && !containsColon(sp.Name) {
				t.Errorf("ParseSpec(%q).String() = %q parses as %+v, want %+v", s, sp.String(), again, sp)
			}
		}
		for _, ts := range [][]string{{s}, {s, "p:" + s}, {"p", s}} {
			c, err := e.ParseChain(ts)
			if err != nil {
				var ee *Error
				if !errors.As(err, &ee) || ee.Kind != KindInvalid || ee.Msg == "" {
					t.Fatalf("ParseChain(%q): untyped error %v", ts, err)
				}
				continue
			}
			if c.Len() != len(c.Names()) {
				t.Fatalf("ParseChain(%q): %d steps, %d names", ts, c.Len(), len(c.Names()))
			}
		}
	})
}

func containsColon(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			return true
		}
	}
	return false
}

// FuzzInspect decodes arbitrary bytes: no crash, no panic, and every error
// is a typed engine error (unsupported, corrupt or too large).
func FuzzInspect(f *testing.F) {
	for _, ext := range []string{"png", "jpg", "gif", "webp", "tif"} {
		data := source(f, 24, 16, ext, ext == "png")
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Add([]byte("GIF89a"))
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add([]byte{0xFF, 0xD8, 0xFF})
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "))
	f.Add([]byte("II*\x00\x08\x00\x00\x00"))
	e, err := New(Config{MaxPixels: 4_000_000})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return // the API refuses empty bodies before the engine sees them
		}
		info, err := e.Inspect(context.Background(), data)
		if err != nil {
			switch KindOf(err) {
			case KindUnsupported, KindCorrupt, KindTooLarge:
			default:
				t.Fatalf("Inspect: untyped error %v", err)
			}
			return
		}
		if info.Width <= 0 || info.Height <= 0 || info.Ext == "" {
			t.Fatalf("Inspect accepted %+v", info)
		}
	})
}

// FuzzAnimated runs animated and multi-page inputs (and mutations of them)
// through Inspect and a chain written as animated GIF and WebP: no crash, no
// panic, every error typed, and an accepted animation keeps a whole number
// of frames.
func FuzzAnimated(f *testing.F) {
	for _, ext := range []string{"gif", "webp"} {
		data := animatedSource(f, ext)
		f.Add(data)
		f.Add(data[:len(data)*2/3])
	}
	f.Add(source(f, 24, 16, "tif", false))
	e, err := New(Config{MaxFrames: 64, MaxAnimationPixels: 400_000, MaxPixels: 4_000_000})
	if err != nil {
		f.Fatal(err)
	}
	chain, err := e.ParseChain([]string{"resize:width=20", "rotate:angle=90", "border:width=1,height=1"})
	if err != nil {
		f.Fatal(err)
	}
	typed := func(t *testing.T, what string, err error) {
		switch KindOf(err) {
		case KindUnsupported, KindCorrupt, KindTooLarge:
		default:
			t.Fatalf("%s: untyped error %v", what, err)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		info, err := e.Inspect(context.Background(), data)
		if err != nil {
			typed(t, "Inspect", err)
			return
		}
		for _, format := range []string{"gif", "webp"} {
			res, err := e.Process(context.Background(), data, Request{Chain: chain, Format: format, Source: info})
			if err != nil {
				typed(t, "Process", err)
				continue
			}
			ref, err := vips.NewImageFromBuffer(res.Data)
			if err != nil {
				t.Fatalf("Process wrote an unreadable %s: %v", format, err)
			}
			if ph := ref.PageHeight(); ph <= 0 || ref.Height()%ph != 0 {
				t.Errorf("%s: height %d, page height %d", format, ref.Height(), ph)
			}
			ref.Close()
		}
	})
}
