package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestAdminImageAnalysis: grid tiles show their placeholder while the
// thumbnails load (the average colour without JavaScript, the BlurHash
// with it), and the image page shows the original's EXIF from a camera
// file written by exiftool, the colours, and the similar images, at 1280
// and 375 px with axe-core clean.
func TestAdminImageAnalysis(t *testing.T) {
	tool, err := exec.LookPath("exiftool")
	if err != nil {
		t.Skip("exiftool is not installed (apt-get install libimage-exiftool-perl)")
	}
	b := newBrowser(t)
	s := startServer(t, "analysis:\n  exifGps: true\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	upload := func(data []byte) string {
		r := s.write(t, http.MethodPost, "/users/alice/images", data, admin)
		if r.Status != http.StatusCreated {
			t.Fatalf("upload: %s", r)
		}
		var got struct{ ImageIdentifier string }
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Fatal(err)
		}
		return got.ImageIdentifier
	}
	camera := upload(cameraJPEG(t, tool, scenePNG(t, 640, 480, 3)))
	copyID := upload(scenePNG(t, 320, 240, 3)) // the same picture, smaller: a near copy
	quads := upload(quadrantsPNG(t))
	for i := range 4 {
		upload(scenePNG(t, 400, 300, 20+i))
	}
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")

	b.open(ui+"/users/alice", "grid")
	if n, m := b.count(".tile .thumb svg.ph rect[fill^='#']"), b.count(".tile img[data-blurhash]"); n != 7 || m != 7 {
		t.Errorf("grid: %d tiles with an average colour, %d with a BlurHash, want 7 each", n, m)
	}
	checkBlurHashDecoder(t, b, quads)

	// Thumbnails that do not arrive: the tiles keep their placeholders.
	block := func(patterns ...*network.BlockPattern) {
		b.do(chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
				return chromedp.Void{}, err
			}
			_, err := cdp.Call(ctx, tg, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: patterns})
			return chromedp.Void{}, err
		}))
	}
	block(&network.BlockPattern{URLPattern: "*://*:*/users/*.webp?*", Block: true})
	b.do(chromedp.Navigate(ui + "/users/alice"))
	b.waitFor(`document.querySelectorAll(".tile img[data-placeholder=blurhash]").length === 7`)
	b.check("grid-loading")
	if bg := eval[string](b, `getComputedStyle(document.querySelector(".tile img")).backgroundImage`); !strings.HasPrefix(bg, `url("blob:`) {
		t.Errorf("a loading tile's background is %q, want its BlurHash as a blob: URL", bg)
	}
	block()

	b.open(ui+"/users/alice/images/"+camera, "image")
	summary := b.text("#exif-summary")
	for _, want := range []string{"Canon EOS R6", "RF24-105mm F4 L IS USM", "1/250 s · f/4 · ISO 400 · 50 mm",
		"2024-05-01 13:45:10", "48.85840, 2.29450"} {
		if !strings.Contains(summary, want) {
			t.Errorf("EXIF summary lacks %q: %s", want, summary)
		}
	}
	b.waitFor(`document.querySelector("#colours .bh[data-placeholder=blurhash]")`)
	if n := b.count("#palette .swatch"); n < 2 {
		t.Errorf("palette: %d swatches", n)
	}
	if href := eval[string](b, `(document.querySelector("#similar a") || {}).href || ""`); !strings.HasSuffix(href, "/images/"+copyID) {
		t.Fatalf("the first similar image links to %q, want the near copy %s", href, copyID)
	}
	if d := b.text("#similar .distance"); !strings.Contains(d, "apart") {
		t.Errorf("similar image's distance: %q", d)
	}
	b.submit("#similar a", "similar-image")
	if !strings.HasSuffix(b.location(), "/images/"+copyID) {
		t.Errorf("following the similar image led to %s", b.location())
	}

	// The playground: thumbnail with a gravity, then a two-line text.
	chain := url.Values{"user": {"alice"}, "image": {camera}, "ext": {"jpg"}, "s0": {"thumbnail"}, "s0.width": {"480"},
		"s0.height": {"320"}, "s0.gravity": {"attention"}, "s1": {"text"}, "s1.text": {"Sunset <b>over</b> the hills\nsecond line"},
		"s1.size": {"28"}, "s1.color": {"ffffff"}, "s1.gravity": {"southwest"}, "s1.x": {"16"}, "s1.y": {"16"},
		"s1.background": {"000000"}, "s1.padding": {"8"}, "s1.opacity": {"80"}}
	b.open(ui+"/playground?"+chain.Encode(), "playground-text")
	if size := b.text("#pg-size"); !strings.HasSuffix(size, "480 × 320 px") {
		t.Errorf("playground output: %q (error %q)", size, b.text("#pg-error"))
	}
	if v := eval[string](b, `document.getElementById("s1-text").value`); v != "Sunset <b>over</b> the hills\nsecond line" {
		t.Errorf("text field holds %q", v)
	}
	if w := eval[float64](b, `document.getElementById("s1-text").getBoundingClientRect().width / document.querySelector(".step .params").getBoundingClientRect().width`); w < .95 {
		t.Errorf("the text field takes %.0f%% of its step's width, want all of it", w*100)
	}
}

// checkBlurHashDecoder decodes, with app.js, the BlurHash the server
// computed for the quadrants picture and finds its four colours where they
// were.
func checkBlurHashDecoder(t *testing.T, b *browser, id string) {
	t.Helper()
	px := eval[[]int](b, fmt.Sprintf(`(() => {
		const h = document.querySelector('a[href$="/images/%s"] img').dataset.blurhash;
		return Array.from(window.vitrine.decodeBlurHash(h, 32, 32));
	})()`, id))
	if len(px) != 32*32*4 {
		t.Fatalf("decoded %d values, want %d", len(px), 32*32*4)
	}
	at := func(x, y int) [3]int { p := 4 * (x + 32*y); return [3]int{px[p], px[p+1], px[p+2]} }
	for _, c := range []struct {
		x, y int
		ok   func(c [3]int) bool
		what string
	}{
		{5, 5, func(c [3]int) bool { return c[0] > c[1]+60 && c[0] > c[2]+60 }, "red"},
		{26, 5, func(c [3]int) bool { return c[1] > c[0]+60 && c[1] > c[2]+60 }, "green"},
		{5, 26, func(c [3]int) bool { return c[2] > c[0]+60 && c[2] > c[1]+60 }, "blue"},
		{26, 26, func(c [3]int) bool { return c[0] > c[2]+60 && c[1] > c[2]+60 }, "yellow"},
	} {
		if got := at(c.x, c.y); !c.ok(got) {
			t.Errorf("decoded BlurHash at (%d, %d) is %v, want %s", c.x, c.y, got, c.what)
		}
	}
}

// quadrantsPNG is red, green, blue and yellow quarters.
func quadrantsPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 200, 200))
	cs := []color.NRGBA{{220, 30, 30, 255}, {30, 200, 40, 255}, {30, 40, 220, 255}, {230, 210, 30, 255}}
	for y := range 200 {
		for x := range 200 {
			img.Set(x, y, cs[x/100+2*(y/100)])
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// cameraJPEG re-encodes a PNG as JPEG and has exiftool write a camera's
// EXIF and a GPS position into it.
func cameraJPEG(t *testing.T, tool string, pngData []byte) []byte {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(pngData))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "camera.jpg")
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "-q", "-overwrite_original", "-EXIF:Make=Canon", "-EXIF:Model=Canon EOS R6",
		"-EXIF:LensModel=RF24-105mm F4 L IS USM", "-EXIF:ExposureTime=1/250", "-EXIF:FNumber=4", "-EXIF:ISO=400",
		"-EXIF:FocalLength=50", "-EXIF:DateTimeOriginal=2024:05:01 13:45:10", "-GPS:GPSLatitude=48.8584",
		"-GPS:GPSLatitudeRef=N", "-GPS:GPSLongitude=2.2945", "-GPS:GPSLongitudeRef=E", path).CombinedOutput(); err != nil {
		t.Fatalf("exiftool: %v %s", err, out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
