//go:build unix

package filters

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/draw"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"
)

// The faces example of wasm-sdk (a listener running pigo on images.post),
// built from its source and run by this host on pigo's test portrait.

// facesListener loads the faces example and returns its listener.
func facesListener(tb testing.TB) Listener {
	tb.Helper()
	return exampleListener(tb, "faces", nil)
}

func portrait(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "wasm-sdk", "examples", "faces", "testdata", "sample.jpg"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// uploadEvent is an images.post event for body with metadata md so far.
func uploadEvent(body []byte, md map[string]any) *recEvent {
	return &recEvent{name: "images.post", body: body, hasImage: true, md: md,
		info: map[string]any{"width": 0, "height": 0, "mime": "image/jpeg", "size": len(body)}}
}

func TestFacesExample(t *testing.T) {
	t.Parallel()
	l := facesListener(t)
	ev := uploadEvent(portrait(t), map[string]any{"poi": []any{map[string]any{"cx": 1, "cy": 2}}})
	if err := l.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	var got struct {
		POI []struct {
			CX, CY, X, Y, Width, Height int
			Source                      string
		}
	}
	b, _ := json.Marshal(ev.md)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.POI) != 2 || got.POI[0].CX != 1 || got.POI[1].Source != "faces" {
		t.Fatalf("metadata %s: want the client's point, then one face", b)
	}
	if f := got.POI[1]; f.X+f.Width/2 < 130 || f.X+f.Width/2 > 190 || f.Width < 120 {
		t.Errorf("face %+v, want one about 200 pixels wide around x=160", f)
	}

	// A picture with no face leaves the metadata alone.
	ev = uploadEvent(jpegOf(t, image.NewRGBA(image.Rect(0, 0, 300, 200))), map[string]any{})
	if err := l.Handle(context.Background(), ev); err != nil || len(ev.md) != 0 {
		t.Errorf("no face: metadata %v, error %v", ev.md, err)
	}
}

func jpegOf(tb testing.TB, img image.Image) []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkFacesExample measures the faces listener in the guest, JPEG
// decode included, on a 12 MP upload tiled with the portrait (ms/MP is
// cpu-ns/op / 12e6 * 1e3; CPU time, as wall time on a busy machine says
// little) and on the 0.128 MP portrait itself.
func BenchmarkFacesExample(b *testing.B) {
	l := facesListener(b)
	src, err := jpeg.Decode(bytes.NewReader(portrait(b)))
	if err != nil {
		b.Fatal(err)
	}
	big := image.NewRGBA(image.Rect(0, 0, 4000, 3000))
	for y := 0; y < 3000; y += 400 {
		for x := 0; x < 4000; x += 320 {
			draw.Draw(big, image.Rect(x, y, x+320, y+400), src, image.Point{}, draw.Src)
		}
	}
	for name, body := range map[string][]byte{"12MP": jpegOf(b, big), "portrait": portrait(b)} {
		b.Run(name, func(b *testing.B) {
			stop := cpuMeter(b)
			for range b.N {
				if err := l.Handle(context.Background(), uploadEvent(body, map[string]any{})); err != nil {
					b.Fatal(err)
				}
			}
			stop()
			// The listener is not fatal: a failure or a timeout would be
			// skipped, and measured as if it were work.
			if st := l.Stats(); st.Errors != 0 || st.Timeouts != 0 {
				b.Fatalf("the guest failed: %+v", st)
			}
		})
	}
}
