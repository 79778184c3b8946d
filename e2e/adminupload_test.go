package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// dropFiles drops files (name and bytes) on the upload page's drop zone,
// as a drag from the desktop does.
func dropFiles(b *browser, files map[string][]byte, order ...string) {
	b.t.Helper()
	var pairs [][2]string
	for _, name := range order {
		pairs = append(pairs, [2]string{name, base64.StdEncoding.EncodeToString(files[name])})
	}
	js, _ := json.Marshal(pairs)
	eval[chromedp.Void](b, `(() => {
		const dt = new DataTransfer();
		for (const [name, b64] of `+string(js)+`) {
			const bin = atob(b64), bytes = new Uint8Array(bin.length);
			for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
			dt.items.add(new File([bytes], name, {type: "image/png"}));
		}
		const zone = document.getElementById("dropzone");
		zone.dispatchEvent(new DragEvent("dragenter", {dataTransfer: dt, bubbles: true, cancelable: true}));
		zone.dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
	})()`)
}

// noisePNG is a w×h PNG of random pixels, which PNG cannot compress: about
// 3·w·h bytes, to upload slowly enough to pause.
func noisePNG(t *testing.T, w, h int, seed uint64) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range img.Pix {
		if i%4 == 3 {
			img.Pix[i] = 255
		} else {
			img.Pix[i] = byte(r.Uint32())
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// throttleUploads limits what the browser sends to the tus endpoint to
// bytesPerSecond (0: no limit).
func throttleUploads(b *browser, bytesPerSecond float64) {
	b.t.Helper()
	conds := []*network.Conditions{}
	if bytesPerSecond > 0 {
		conds = append(conds, &network.Conditions{URLPattern: "*://*:*/users/*/uploads*", DownloadThroughput: -1, UploadThroughput: bytesPerSecond})
	}
	b.do(chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return chromedp.Void{}, err
		}
		_, err := cdp.Call(ctx, tg, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{MatchedNetworkConditions: conds})
		return chromedp.Void{}, err
	}))
}

// TestAdminUploadResumable: the upload page sends dropped files with tus
// (tus-js-client) under an upload token it got from the UI's server: three
// files reach 100% each and in total and are listed; a large one is paused
// and resumed from the offset the server had; an image by URL comes from a
// loopback origin (outbound.allow opens it), and a URL that is not an
// image, or at a private address, is refused with the API's reason.
func TestAdminUploadResumable(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "outbound:\n  allow: [\"127.0.0.1\"]\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	b.open(ui+"/upload", "upload")
	b.do(chromedp.SetValue(chromedp.ID("up-user"), "alice"))

	// Three files dropped at once.
	files := map[string][]byte{}
	var names []string
	for i := range 3 {
		name := fmt.Sprintf("scene-%d.png", i)
		files[name] = scenePNG(t, 640, 480, 10+i)
		names = append(names, name)
	}
	dropFiles(b, files, names...)
	b.waitFor(`document.querySelectorAll("#upload-list .badge-ok").length === 3`)
	if mode := eval[string](b, `document.getElementById("upload-total").dataset.mode`); mode != "tus" {
		t.Fatalf("the page uploaded %q, want with tus (mode note: %q)", mode, b.text("#upload-mode"))
	}
	if p := b.text("#upload-total-bar"); eval[int](b, `document.getElementById("upload-total-bar").value`) != 100 {
		t.Fatalf("total progress %s, want 100", p)
	}
	if st := b.text("#upload-status"); st != "3 of 3 uploaded." {
		t.Fatalf("status %q, want 3 of 3 uploaded.", st)
	}
	if errs := b.text("#upload-list .field-error"); errs != "" {
		t.Fatalf("tus upload: %s", errs)
	}
	for _, name := range names {
		if !strings.Contains(b.text("#upload-list"), md5Hex(files[name])) {
			t.Fatalf("%s is not listed with its identifier %s", name, md5Hex(files[name]))
		}
	}
	b.check("upload-tus-done")

	// A large file sent slowly: paused at some progress, resumed, finished.
	big := noisePNG(t, 1100, 800, 7)
	throttleUploads(b, 400<<10)
	dropFiles(b, map[string][]byte{"noise.png": big}, "noise.png")
	item := `document.querySelector("#upload-list li:last-child")`
	b.waitFor(item + `.querySelector("progress") && ` + item + `.querySelector("progress").value >= 10`)
	b.do(chromedp.Click(chromedp.CSS(`#upload-list li:last-child button`), chromedp.NodeVisible))
	b.waitFor(item + `.dataset.state === "paused"`)
	paused := eval[int](b, item+`.querySelector("progress").value`)
	if label := b.text("#upload-list li:last-child button"); label != "Resume" {
		t.Fatalf("the paused file's button says %q, want Resume", label)
	}
	b.check("upload-paused")
	if paused >= 100 {
		t.Fatalf("paused at %d%%", paused)
	}
	b.do(chromedp.Click(chromedp.CSS(`#upload-list li:last-child button`), chromedp.NodeVisible))
	b.waitFor(item + `.dataset.resumedFrom !== undefined`)
	from, _ := strconv.Atoi(eval[string](b, item+`.dataset.resumedFrom`))
	if from <= 0 || from >= len(big) {
		t.Fatalf("resumed from offset %d of %d, want past the start (paused at %d%%)", from, len(big), paused)
	}
	throttleUploads(b, 0)
	b.waitFor(item + `.dataset.state === "done" || ` + item + `.dataset.state === "error"`)
	if got := b.text("#upload-list li:last-child"); !strings.Contains(got, md5Hex(big)) {
		t.Fatalf("the resumed file: %q, want its identifier %s", got, md5Hex(big))
	}
	t.Logf("paused at %d%%, resumed from byte %d of %d", paused, from, len(big))

	// By URL, from a loopback origin.
	photo := scenePNG(t, 500, 375, 20)
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/photo.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(photo)
		default:
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<!doctype html><title>A page</title>"))
		}
	}))
	t.Cleanup(o.Close)
	byURL := func(u string) string {
		t.Helper()
		n := b.count("#upload-list li")
		b.do(chromedp.SetValue(chromedp.ID("up-url"), u))
		b.do(chromedp.Click(chromedp.ID("up-url-submit"), chromedp.NodeVisible))
		b.waitFor(fmt.Sprintf(`document.querySelectorAll("#upload-list li").length === %d && document.querySelector("#upload-list li:last-child").dataset.state`, n+1))
		return b.text("#upload-list li:last-child")
	}
	if got := byURL(o.URL + "/photo.png"); !strings.Contains(got, md5Hex(photo)) || !strings.Contains(got, "Uploaded") {
		t.Fatalf("upload by URL: %q", got)
	}
	if got := byURL(o.URL + "/page.html"); !strings.Contains(got, "Unsupported image type") {
		t.Fatalf("a URL that is no image: %q", got)
	}
	// 10.0.0.0/8 is refused by the guard before any connection is made.
	if got := byURL("http://10.20.30.40/photo.png"); !strings.Contains(got, "private address") {
		t.Fatalf("a URL at a private address: %q", got)
	}
	b.check("upload-by-url")

	// Everything is in alice's grid.
	b.open(ui+"/users/alice", "grid")
	for _, data := range [][]byte{files[names[0]], files[names[1]], files[names[2]], big, photo} {
		if n := b.count(`a[href$="/images/` + md5Hex(data) + `"]`); n == 0 {
			t.Errorf("image %s is not in the grid", md5Hex(data))
		}
	}
}
