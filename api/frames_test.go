package api_test

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"net/http"
	"testing"
)

// TestOriginalFrames: image responses carry <prefix>-OriginalFrames, the
// frame count read at upload: 3 for a three-frame GIF, 1 for a PNG.
func TestOriginalFrames(t *testing.T) {
	e := newEnv(t, testConfig())
	anim := &gif.GIF{}
	for i := range 3 {
		p := image.NewPaletted(image.Rect(0, 0, 8, 8), color.Palette{color.Black, color.White})
		p.SetColorIndex(i, i, 1)
		anim.Image, anim.Delay = append(anim.Image, p), append(anim.Delay, 10)
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, anim); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		data   []byte
		frames string
	}{{buf.Bytes(), "3"}, {pngImage(t, 8, 8, 1), "1"}} {
		id := e.upload(c.data)
		r := e.request(http.MethodHead, e.tokenURL("/users/alice/images/"+id, userPriv), nil)
		if r.StatusCode != 200 || r.Header.Get("X-Service-OriginalFrames") != c.frames {
			t.Fatalf("HEAD %s: %d, frames %q, want %s", id, r.StatusCode, r.Header.Get("X-Service-OriginalFrames"), c.frames)
		}
	}
}
