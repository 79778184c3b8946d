package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"
)

// pngChunks rewrites chunk typ of a PNG with f applied to its data, fixing
// the CRC, so the result is a well-formed file with the given content.
func patchPNGChunk(t *testing.T, src []byte, typ string, f func([]byte)) []byte {
	t.Helper()
	out := bytes.Clone(src)
	for off := 8; off+12 <= len(out); {
		n := int(binary.BigEndian.Uint32(out[off:]))
		if string(out[off+4:off+8]) == typ {
			f(out[off+8 : off+8+n])
			binary.BigEndian.PutUint32(out[off+8+n:], crc32.ChecksumIEEE(out[off+4:off+8+n]))
			return out
		}
		off += 12 + n
	}
	t.Fatalf("no %s chunk", typ)
	return nil
}

// patchJPEGSize sets the frame size in the SOF marker of a JPEG.
func patchJPEGSize(t *testing.T, src []byte, w, h int) []byte {
	t.Helper()
	out := bytes.Clone(src)
	for i := 2; i+9 < len(out); i++ {
		if out[i] == 0xFF && (out[i+1] == 0xC0 || out[i+1] == 0xC2) {
			binary.BigEndian.PutUint16(out[i+5:], uint16(h))
			binary.BigEndian.PutUint16(out[i+7:], uint16(w))
			return out
		}
	}
	t.Fatal("no SOF marker")
	return nil
}

func TestProbe(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	small := source(t, 40, 30, "png", false)
	hugePNG := patchPNGChunk(t, small, "IHDR", func(d []byte) {
		binary.BigEndian.PutUint32(d[0:], 60000)
		binary.BigEndian.PutUint32(d[4:], 60000)
	})
	tallPNG := patchPNGChunk(t, small, "IHDR", func(d []byte) { binary.BigEndian.PutUint32(d[4:], 40000) })
	zeroPNG := patchPNGChunk(t, small, "IHDR", func(d []byte) { binary.BigEndian.PutUint32(d[0:], 0) })
	hugeJPEG := patchJPEGSize(t, source(t, 40, 30, "jpg", false), 60000, 60000)
	tests := []struct {
		name   string
		data   []byte
		kind   Kind
		msg    string
		mime   string
		ext    string
		w, h   int
		strict bool
	}{
		{name: "png", data: small, mime: "image/png", ext: "png", w: 40, h: 30},
		{name: "jpeg", data: source(t, 41, 31, "jpg", false), mime: "image/jpeg", ext: "jpg", w: 41, h: 31},
		{name: "gif", data: source(t, 42, 32, "gif", false), mime: "image/gif", ext: "gif", w: 42, h: 32},
		{name: "webp", data: source(t, 43, 33, "webp", false), mime: "image/webp", ext: "webp", w: 43, h: 33},
		{name: "tiff", data: source(t, 44, 34, "tif", false), mime: "image/tiff", ext: "tif", w: 44, h: 34},
		{name: "text", data: []byte("hello, world\n"), kind: KindUnsupported, msg: "Unsupported image type: text/plain"},
		{name: "html", data: []byte("<html><body>x</body></html>"), kind: KindUnsupported, msg: "Unsupported image type: text/html"},
		{name: "huge png", data: hugePNG, kind: KindTooLarge, msg: "Image too large: 60000x60000 pixels; the limits are 32768x32768 and 100000000 pixels in all"},
		{name: "tall png", data: tallPNG, kind: KindTooLarge, msg: "Image too large: 40x40000 pixels; the limits are 32768x32768 and 100000000 pixels in all"},
		{name: "huge jpeg", data: hugeJPEG, kind: KindTooLarge, msg: "Image too large: 60000x60000 pixels; the limits are 32768x32768 and 100000000 pixels in all"},
		{name: "zero png", data: zeroPNG, kind: KindCorrupt, msg: "Invalid image"},
		{name: "png magic only", data: small[:8], kind: KindCorrupt, msg: "Invalid image"},
		{name: "jpeg magic only", data: []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 0}, kind: KindCorrupt, msg: "Invalid image"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			info, err := e.Probe(tc.data)
			if tc.msg != "" {
				if err == nil {
					t.Fatalf("Probe: no error, want %q", tc.msg)
				}
				var ee *Error
				if KindOf(err) != tc.kind || !asError(err, &ee) || ee.Msg != tc.msg {
					t.Fatalf("Probe: %v (kind %v), want %q (kind %v)", err, KindOf(err), tc.msg, tc.kind)
				}
				// Refusing a 3.6 gigapixel header must not decode it.
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("Probe took %v", d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Info{Mime: tc.mime, Ext: tc.ext, Width: tc.w, Height: tc.h, Frames: 1}
			if info != want {
				t.Errorf("Probe = %+v, want %+v", info, want)
			}
		})
	}
}

func TestProbeLimitsConfigurable(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{Limits: Limits{MaxWidth: 100, MaxHeight: 50, MaxPixels: 3000}})
	for _, tc := range []struct {
		w, h int
		ok   bool
	}{{100, 30, true}, {101, 10, false}, {10, 51, false}, {60, 50, true}, {61, 50, false}} {
		_, err := e.Probe(source(t, tc.w, tc.h, "png", false))
		if (err == nil) != tc.ok || (err != nil && KindOf(err) != KindTooLarge) {
			t.Errorf("%dx%d: err = %v, want ok=%v", tc.w, tc.h, err, tc.ok)
		}
	}
}

func TestInspect(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	jpg := source(t, 300, 200, "jpg", false)
	png := source(t, 300, 200, "png", false)
	garbage := patchPNGChunk(t, png, "IDAT", func(d []byte) {
		for i := range d {
			d[i] = byte(i*7 + 3)
		}
	})
	tests := []struct {
		name string
		data []byte
		kind Kind // KindInternal = no error expected
	}{
		{"jpeg", jpg, KindInternal},
		{"png", png, KindInternal},
		{"gif", source(t, 30, 20, "gif", false), KindInternal},
		{"truncated jpeg", jpg[:len(jpg)/2], KindCorrupt},
		{"truncated png", png[:len(png)*2/3], KindCorrupt},
		{"png garbage idat", garbage, KindCorrupt},
		{"text", []byte("just some text"), KindUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := e.Inspect(context.Background(), tc.data)
			if tc.kind == KindInternal {
				if err != nil {
					t.Fatalf("Inspect: %v", err)
				}
				return
			}
			if err == nil || KindOf(err) != tc.kind {
				t.Fatalf("Inspect: %v (kind %v), want kind %v", err, KindOf(err), tc.kind)
			}
		})
	}
}

func TestAcquireHonoursContext(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{Concurrency: 1})
	if err := e.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := e.acquire(ctx); err == nil {
		t.Fatal("second acquire succeeded with a full semaphore")
	}
	_, err := e.Inspect(ctx, source(t, 10, 10, "png", false))
	if err == nil {
		t.Error("Inspect ran with a full semaphore and an expired context")
	}
	e.release()
	if err := e.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.release()
}

func TestConfig(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	c := e.Config()
	if c.Concurrency < 1 || c.MaxWidth != 32768 || c.MaxHeight != 32768 || c.MaxPixels != 100_000_000 ||
		c.MaxTransformations != 20 || c.JPEGQuality != 80 {
		t.Errorf("defaults not applied: %+v", c)
	}
	for _, bad := range []Config{{Concurrency: -1}, {JPEGQuality: 101}, {Limits: Limits{MaxWidth: -1}}, {Presets: map[string][]string{"x": nil}}} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}
