package engine

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math/rand/v2"
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
	e, err := New(Config{Limits: Limits{MaxPixels: 4_000_000}})
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
	e, err := New(Config{Limits: Limits{MaxFrames: 64, MaxAnimationPixels: 400_000, MaxPixels: 4_000_000}})
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

// FuzzBlur runs every kind of blur, with fuzzed parameters the parser
// accepts, on small images of every shape the engine holds (grey, grey with
// alpha, sRGB, sRGB with alpha; 8 and 16 bits): no error, no panic, and
// the size, bands and format kept. Under -asan (`make asan`) the kernels'
// pixel buffers are exact C allocations, so that a read or write past an
// image is reported.
func FuzzBlur(f *testing.F) {
	f.Add(uint8(40), uint8(30), uint8(2), uint8(2), 10.0, 5.0, 30.0, uint64(1))
	f.Add(uint8(1), uint8(9), uint8(0), uint8(3), 0.0, 0.0, 0.05, uint64(2))
	f.Add(uint8(9), uint8(1), uint8(7), uint8(1), 6.0, 3.0, 0.0, uint64(3))
	f.Add(uint8(3), uint8(2), uint8(5), uint8(2), 100.0, 100.0, -270.0, uint64(4))
	f.Add(uint8(17), uint8(23), uint8(3), uint8(4), 0.0, 0.0, 360.0, uint64(5))
	f.Add(uint8(33), uint8(5), uint8(1), uint8(0), 2.0, 1.0, 0.0, uint64(6))
	f.Add(uint8(12), uint8(12), uint8(2), uint8(1), 1.0, 1e-7, 0.0, uint64(7)) // under gaussmat's smallest sigma
	e := newTestEngine(f, Config{})
	kinds := []string{"gaussian", "adaptive", "motion", "radial", "rotational"}
	f.Fuzz(func(t *testing.T, w, h, shape, kind uint8, radius, sigma, angle float64, seed uint64) {
		spec := fmt.Sprintf("blur:type=%s,radius=%g,sigma=%g,angle=%g", kinds[int(kind)%len(kinds)], radius, sigma, angle)
		c, err := e.ParseChain([]string{spec})
		if err != nil {
			return // out of range: the parser's 400, fuzzed by FuzzParseSpec
		}
		width, height := int(w%40)+1, int(h%40)+1
		bands, deep := int(shape%4)+1, shape&4 != 0
		pic := image.NewNRGBA(image.Rect(0, 0, width, height))
		r := rand.New(rand.NewPCG(seed, seed))
		for i := range pic.Pix {
			pic.Pix[i] = byte(r.UintN(256))
		}
		img, err := vips.NewImageFromGoImage(pic)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { img.Close() }()
		steps := []func() error{}
		switch bands {
		case 1, 2:
			steps = append(steps, func() error { return img.ToColorSpace(vips.InterpretationBW) })
			if bands == 1 {
				steps = append(steps, func() error { return img.ExtractBand(0, 1) })
			}
		case 3:
			steps = append(steps, func() error { return img.ExtractBand(0, 3) })
		}
		if deep {
			steps = append(steps, func() error { return img.Linear1(257, 0) }, func() error { return img.Cast(vips.BandFormatUshort) })
		}
		for _, step := range steps {
			if err := step(); err != nil {
				t.Fatal(err)
			}
		}
		format := img.BandFormat()
		s := &State{Ctx: context.Background(), Image: img, Output: &Output{}, engine: e}
		if err := c.steps[0].Apply(s); err != nil {
			t.Fatalf("%s on %dx%d, %d bands, deep %v: %v", spec, width, height, bands, deep, err)
		}
		img = s.Image
		if _, err := img.ToBytes(); err != nil {
			t.Fatalf("%s: rendering: %v", spec, err)
		}
		if img.Width() != width || img.Height() != height || img.Bands() != bands || img.BandFormat() != format {
			t.Fatalf("%s on %dx%d, %d bands, %v: got %dx%d, %d bands, %v", spec, width, height, bands, format,
				img.Width(), img.Height(), img.Bands(), img.BandFormat())
		}
	})
}
