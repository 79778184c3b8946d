package engine

import (
	"fmt"
	"image"
	"image/color"
	"testing"
)

// background is the flat colour of offCentre's picture.
var background = color.NRGBA{R: 128, G: 140, B: 150, A: 255}

// offCentre draws a w x h flat picture with one detailed, saturated 80 x 80
// subject (a checkerboard of red, yellow, skin tone and black) whose
// top-left corner is at (sx, sy).
func offCentre(w, h, sx, sy int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	tiles := []color.NRGBA{{230, 30, 30, 255}, {250, 220, 20, 255}, {224, 172, 140, 255}, {10, 10, 10, 255}}
	for y := range h {
		for x := range w {
			c := background
			if x >= sx && x < sx+80 && y >= sy && y < sy+80 {
				c = tiles[((x-sx)/8+(y-sy)/8*3)%len(tiles)]
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

// subjectPixels counts the pixels of an encoded image that are not the
// background.
func subjectPixels(t *testing.T, encoded []byte) int {
	t.Helper()
	img := decodeRGBA(t, encoded)
	n := 0
	for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
		for x := img.Rect.Min.X; x < img.Rect.Max.X; x++ {
			if !near(img.NRGBAAt(x, y), background, 30) {
				n++
			}
		}
	}
	return n
}

// TestGravitySubject crops a picture whose subject sits in a corner:
// attention and entropy keep the subject, centre loses it, faces follows the
// metadata's points of interest and falls back to attention without them,
// and smartSize without a POI now keeps it too.
func TestGravitySubject(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := encodePicture(t, offCentre(400, 300, 300, 200), "png")
	wide := encodePicture(t, offCentre(400, 200, 310, 60), "png")
	facesLeft := Env{Metadata: map[string]any{"poi": []any{map[string]any{"x": 10, "y": 10, "width": 40, "height": 40}}}}
	noPOI := Env{Metadata: map[string]any{"title": "no poi"}}
	const all, none = 80 * 80, 0
	tests := []struct {
		name string
		src  []byte
		env  Env
		t    string
		want int // subject pixels expected, within 10%
	}{
		{"crop_centre", src, Env{}, "crop:width=150,height=150,gravity=centre", none},
		{"crop_attention", src, Env{}, "crop:width=150,height=150,gravity=attention", all},
		{"crop_entropy", src, Env{}, "crop:width=150,height=150,gravity=entropy", all},
		{"crop_faces_without_poi", src, noPOI, "crop:width=150,height=150,gravity=faces", all},
		{"crop_faces_elsewhere", src, facesLeft, "crop:width=150,height=150,gravity=faces", none},
		{"thumbnail_centre", wide, Env{}, "thumbnail:width=100,height=100", none},
		{"thumbnail_attention", wide, Env{}, "thumbnail:width=100,height=100,gravity=attention", all / 4},
		{"smartSize_no_poi", wide, Env{}, "smartSize:width=100,height=100", all / 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, e, tc.src, "png", tc.env, tc.t)
			got := subjectPixels(t, res.Data)
			if got < tc.want*9/10 || got > tc.want*11/10 {
				t.Errorf("%s: %d subject pixels, want about %d", tc.t, got, tc.want)
			}
			if tc.name == "crop_attention" || tc.name == "thumbnail_attention" {
				assertGolden(t, "gravity_"+tc.name, res.Data, 2.5)
			}
		})
	}
}

// TestGravityCompass checks that each compass point puts the crop where it
// says: the same pixels as a crop at the matching x and y.
func TestGravityCompass(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := source(t, 160, 120, "png", false)
	xs := map[byte]int{'w': 0, 'c': 50, 'e': 100} // (160-60)/2
	ys := map[byte]int{'n': 0, 'c': 30, 's': 60}  // (120-60)/2
	for _, tc := range []struct{ g, at string }{
		{"centre", "cc"}, {"north", "cn"}, {"northeast", "en"}, {"east", "ec"}, {"southeast", "es"},
		{"south", "cs"}, {"southwest", "ws"}, {"west", "wc"}, {"northwest", "wn"},
	} {
		t.Run(tc.g, func(t *testing.T) {
			t.Parallel()
			want := run(t, e, src, "png", Env{}, fmt.Sprintf("crop:width=60,height=60,x=%d,y=%d", xs[tc.at[0]], ys[tc.at[1]]))
			got := run(t, e, src, "png", Env{}, "crop:width=60,height=60,x=5,mode=center-y,gravity="+tc.g)
			if mae, _ := compare(decodeRGBA(t, want.Data), decodeRGBA(t, got.Data)); mae != 0 {
				t.Errorf("gravity=%s differs from the crop at %s (error %.2f)", tc.g, tc.at, mae)
			}
		})
	}
}

// TestGravityParse checks the parameter's validation and that gravity=faces
// makes the chain ask for the image's metadata.
func TestGravityParse(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	if _, err := e.ParseChain([]string{"thumbnail:gravity=up"}); err == nil {
		t.Error("gravity=up was accepted")
	}
	if _, err := e.ParseChain([]string{"crop:width=10,height=10,gravity=middle"}); err == nil {
		t.Error("crop gravity=middle was accepted")
	}
	for ts, want := range map[string]bool{
		"thumbnail:gravity=faces":                 true,
		"crop:width=10,height=10,gravity=faces":   true,
		"thumbnail:gravity=attention":             false,
		"crop:width=10,height=10,gravity=entropy": false,
	} {
		c, err := e.ParseChain([]string{ts})
		if err != nil {
			t.Fatalf("%s: %v", ts, err)
		}
		if c.NeedsMetadata() != want {
			t.Errorf("%s: NeedsMetadata %v, want %v", ts, c.NeedsMetadata(), want)
		}
	}
	// With a gravity, x, y and mode are ignored, their bounds too.
	src := source(t, 160, 120, "png", false)
	if res := run(t, e, src, "png", Env{}, "crop:width=150,height=100,x=100,y=100,gravity=east"); res.Width != 150 || res.Height != 100 {
		t.Errorf("crop with gravity and x: %dx%d", res.Width, res.Height)
	}
	a, _ := e.ParseChain([]string{"thumbnail:width=10,gravity=attention"})
	b, _ := e.ParseChain([]string{"thumbnail:width=10"})
	if a.Key() == b.Key() {
		t.Errorf("the gravity is not part of the variant key: %q", a.Key())
	}
}
