package api_test

import (
	"bytes"
	"image"
	"image/color"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"testing"
)

// TestOutputsAreStripped uploads a JPEG carrying GPS, camera, XMP and IPTC
// metadata and an Adobe RGB profile (built by the engine's tests, see
// engine/fixtures_test.go) and checks that the original comes back byte
// for byte while every transformed or converted output carries none of it
// and shows the colour converted to sRGB.
func TestOutputsAreStripped(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "engine", "testdata", "private.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, testConfig())
	id := e.upload(src)
	base := "/users/alice/images/" + id

	if r := e.get(e.tokenURL(base, userPriv)); r.StatusCode != 200 || !bytes.Equal(r.body, src) {
		t.Fatalf("original: %d, %d bytes, identical %v", r.StatusCode, len(r.body), bytes.Equal(r.body, src))
	}
	if r := e.get(e.tokenURL(base+".jpg", userPriv)); !bytes.Equal(r.body, src) {
		t.Fatal("original by its own extension is not byte-identical")
	}
	// Adobe RGB (200, 60, 60) is sRGB (231.5, 57.4, 57.5).
	want := color.NRGBA{231, 57, 57, 255}
	planted := []string{"VitrineTestCam", "Model-GPS-7", "VitrineXMPCreator", "VitrineIPTCByline", "Exif\x00\x00", "Adobe RGB"}
	for _, path := range []string{
		".png",
		".webp",
		".gif",
		".jpg?t[]=thumbnail:width=20,height=20",
		".jpg?t[]=resize:width=32",
		".png?t[]=crop:width=20,height=20,x=10,y=10",
		".jpg?t[]=desaturate&t[]=modulate:s=0", // colour steps: still no metadata
		".webp?t[]=rotate:angle=90",
		".jpg?t[]=strip",
	} {
		t.Run(path, func(t *testing.T) {
			r := e.get(e.tokenURL(base+path, userPriv))
			if r.StatusCode != 200 {
				t.Fatalf("%d %s", r.StatusCode, r.body)
			}
			for _, s := range planted {
				if bytes.Contains(r.body, []byte(s)) {
					t.Errorf("output carries %q", s)
				}
			}
			img, format, err := image.Decode(bytes.NewReader(r.body))
			if err != nil || format == "webp" || bytes.Contains([]byte(path), []byte("desaturate")) {
				// x/image/webp reads lossy WebP's limited-range YCbCr as
				// full range; the engine's tests check WebP colours with
				// libvips. Grey has its own colour.
				return
			}
			b := img.Bounds()
			got := color.NRGBAModel.Convert(img.At(b.Dx()/2, b.Dy()/2)).(color.NRGBA)
			tol := 4
			if format == "gif" {
				tol = 12
			}
			if d := maxDiff(got, want); d > tol {
				t.Errorf("%s centre %v, want sRGB %v", format, got, want)
			}
		})
	}
}

func maxDiff(a, b color.NRGBA) int {
	d := 0
	for _, v := range []int{int(a.R) - int(b.R), int(a.G) - int(b.G), int(a.B) - int(b.B), int(a.A) - int(b.A)} {
		d = max(d, v, -v)
	}
	return d
}
