package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestAdminUI drives the admin UI in a real chromium through an operator's
// day: sign-in (wrong key first), drag-and-drop upload, browsing and
// paging, metadata editing (valid and invalid JSON), a three-step chain in
// the playground with a live preview and a signed URL that works, a new key
// with a rule, a page that key may not see, rotation and deletion, and
// sign-out; then that a form post without the CSRF token is refused and a
// copied session cookie stops working after sign-out. Every page is checked
// with axe-core and captured at 1280 and 375 px.
func TestAdminUI(t *testing.T) {
	b := newBrowser(t)
	filtersDir := t.TempDir()
	s := startServer(t, "accessControl:\n  database: true\nfilters:\n  dir: "+filtersDir+"\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	ui := s.URL + "/admin"

	// Sign-in: a wrong private key is refused, the right one lets in.
	b.open(ui+"/", "signin")
	if !strings.Contains(b.location(), "/admin/signin") {
		t.Fatalf("without a session /admin/ went to %s, want the sign-in page", b.location())
	}
	signIn := func(k key, name string) {
		t.Helper()
		b.do(chromedp.SetValue(chromedp.ID("publicKey"), k.Public), chromedp.SetValue(chromedp.ID("privateKey"), k.Private))
		b.submit(`form[action$="/signin"] button[type=submit]`, name)
	}
	signIn(key{Public: admin.Public, Private: admin.Private + "x"}, "signin-failed")
	if msg := b.text("#signin-error"); !strings.Contains(msg, "not valid") {
		t.Fatalf("wrong key: error %q, want it refused", msg)
	}
	signIn(admin, "overview-empty")
	if h := b.text("h1"); h != "Overview" {
		t.Fatalf("after sign-in: h1 %q at %s", h, b.location())
	}

	// Upload by drag and drop: three files at once, each with its own
	// progress, all dropped on the drop zone.
	b.open(ui+"/upload", "upload")
	b.do(chromedp.SetValue(chromedp.ID("up-user"), "alice"))
	files := map[string][]byte{}
	var names []string
	for i := range 3 {
		name := fmt.Sprintf("photo-%d.png", i)
		files[name] = scenePNG(t, 400, 300, i)
		names = append(names, name)
	}
	dropFiles(b, files, names...)
	b.waitFor(`document.querySelectorAll("#upload-list .badge-ok").length === 3`)
	b.check("upload-done")
	if errs := b.text("#upload-list .field-error"); errs != "" {
		t.Fatalf("drag and drop upload: %s", errs)
	}
	// The first file again: stored already, and the page says so.
	dropFiles(b, files, names[0])
	b.waitFor(`document.querySelectorAll("#upload-list .badge").length === 4`)
	b.check("upload-duplicate")
	if last := b.text("#upload-list li:last-child .badge"); last != "Already existed" {
		t.Fatalf("the same file uploaded again says %q, want Already existed", last)
	}
	// 25 more through the API, so that the grid has two pages.
	for i := range 25 {
		r := s.write(t, http.MethodPost, "/users/alice/images", scenePNG(t, 160, 120, 3+i), admin)
		wantStatus(t, "upload through the API", r, http.StatusCreated)
	}

	// Browse and page: 28 images, 24 a page.
	b.open(ui+"/users/alice", "images")
	if c := b.text(".count"); !strings.Contains(c, "28 images") || !strings.Contains(c, "page 1 of 2") {
		t.Fatalf("images count: %q", c)
	}
	if n := eval[int](b, `document.querySelectorAll(".grid .tile").length`); n != 24 {
		t.Fatalf("page 1 shows %d tiles, want 24", n)
	}
	b.submit(`a[rel=next]`, "images-page2")
	if n := eval[int](b, `document.querySelectorAll(".grid .tile").length`); n != 4 {
		t.Fatalf("page 2 shows %d tiles, want 4", n)
	}
	b.do(chromedp.SetValue(chromedp.ID("f-sort"), "size:desc"))
	b.submit(`.filters button[type=submit]`, "images-sorted")

	// An image: metadata, valid then invalid.
	b.submit(`.grid .tile a`, "image")
	imagePage := b.location()
	b.do(chromedp.SetValue(chromedp.ID("metadata"), `{"title": "sunset", "tags": ["sea"]}`))
	b.submit(`form[action$="/metadata"] button[type=submit]`, "image-metadata-saved")
	if n := b.text(".notice-ok"); n != "Metadata saved." {
		t.Fatalf("valid metadata: notice %q", n)
	}
	if v := eval[string](b, `document.getElementById("metadata").value`); !strings.Contains(v, `"sunset"`) {
		t.Fatalf("saved metadata not shown: %q", v)
	}
	b.do(chromedp.SetValue(chromedp.ID("metadata"), `{"title": `))
	b.submit(`form[action$="/metadata"] button[type=submit]`, "image-metadata-invalid")
	if msg := b.text("#metadata-error"); msg == "" || eval[string](b, `document.getElementById("metadata").getAttribute("aria-invalid")`) != "true" {
		t.Fatalf("invalid metadata: error %q next to the field", msg)
	}
	// A short URL: created, fetched without a key, deleted.
	b.do(chromedp.SetValue(chromedp.ID("su-query"), "t[]=thumbnail:width=40,height=40"), chromedp.SetValue(chromedp.ID("su-ext"), "png"))
	b.submit(`form[action$="/shorturls"] button[type=submit]`, "image-shorturl")
	short := eval[string](b, `document.getElementById("short-url").value`)
	if r, err := http.Get(short); err != nil || r.StatusCode != 200 {
		t.Fatalf("short URL %q: %v %v", short, r, err)
	} else {
		r.Body.Close()
	}
	b.submit(`form[action$="/shorturls/delete"] button[type=submit]`, "image-shorturl-deleted")
	if r, err := http.Get(short); err != nil || r.StatusCode != 404 {
		t.Fatalf("deleted short URL %q: %v %v", short, r, err)
	} else {
		r.Body.Close()
	}
	u, _ := url.Parse(imagePage)
	parts := strings.Split(u.Path, "/")
	imageID := parts[len(parts)-1]

	// The grid filtered by the metadata saved above: 28 images become 1,
	// and a malformed entry shows its error next to the field.
	b.open(ui+"/users/alice", "images-unfiltered")
	b.do(chromedp.SetValue(chromedp.ID("f-metadata"), "title=sunset"))
	b.submit(`.filters button[type=submit]`, "images-metadata-filter")
	if c := strings.TrimSpace(b.text(".count")); !strings.HasPrefix(c, "1 image ") {
		t.Fatalf("grid filtered by metadata: count %q, want 1 image", c)
	}
	if href := eval[string](b, `document.querySelector(".grid .tile a").getAttribute("href")`); !strings.HasSuffix(href, "/"+imageID) {
		t.Fatalf("grid filtered by metadata shows %q, want image %s", href, imageID)
	}
	b.do(chromedp.SetValue(chromedp.ID("f-metadata"), "title"))
	b.submit(`.filters button[type=submit]`, "images-metadata-invalid")
	if msg := b.text("#f-metadata-error"); !strings.Contains(msg, "key=value") {
		t.Fatalf("invalid metadata filter: error %q next to the field", msg)
	}

	// Playground: three steps added with the no-JavaScript buttons, then a
	// field changed and the live preview follows.
	b.open(ui+"/playground?user=alice&image="+imageID+"&ext=png", "playground-empty")
	for _, name := range []string{"resize", "flipHorizontally", "desaturate"} {
		b.do(chromedp.SetValue(chromedp.ID("pg-add"), name))
		b.submit(`button[value=add]`, "playground-add-"+strings.ToLower(name))
	}
	if n := eval[int](b, `document.querySelectorAll(".steps .step").length`); n != 3 {
		t.Fatalf("%d steps, want 3", n)
	}
	if e := b.text("#pg-error"); !strings.Contains(e, "resize") {
		t.Fatalf("resize without a size: the API's error %q should be shown", e)
	}
	// Reorder: desaturate up, then back down.
	b.submit(`button[value="up:2"]`, "playground-reordered")
	if q := eval[string](b, `document.getElementById("pg-query").value`); !strings.Contains(q, "flipHorizontally&t[]=desaturate") &&
		!strings.Contains(q, "desaturate&t[]=flipHorizontally") {
		t.Fatalf("query after reorder: %q", q)
	}
	// Live: typing a width updates preview, query and signed URL.
	before := eval[string](b, `document.getElementById("pg-preview").getAttribute("src") || ""`)
	b.do(chromedp.SendKeys(chromedp.ID("s0-width"), "80"))
	b.waitFor(`document.getElementById("pg-query").value.includes("resize:width=80")`)
	b.waitFor(`(() => { const i = document.getElementById("pg-preview"); return !i.hidden && i.complete && i.naturalWidth > 0; })()`)
	after := eval[string](b, `document.getElementById("pg-preview").getAttribute("src")`)
	if after == before || !strings.Contains(after, "resize") {
		t.Fatalf("preview did not change: %q -> %q", before, after)
	}
	b.check("playground")
	b.do(chromedp.Click(chromedp.CSS(`[data-copy="pg-url"]`), chromedp.NodeVisible))
	signed := eval[string](b, `document.getElementById("pg-url").value`)
	resp, err := http.Get(signed)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("signed URL %s: %d %s", signed, resp.StatusCode, body)
	}
	if format, w, h := decodeSize(t, "signed URL", body); format != "png" || w != 80 || h != 60 {
		t.Fatalf("signed URL gave %s %dx%d, want png 80x60", format, w, h)
	}

	// A larger result for the record.
	eval[chromedp.Void](b, `document.getElementById("s0-width").value = ""`)
	b.do(chromedp.SendKeys(chromedp.ID("s0-width"), "360"))
	b.waitFor(`document.getElementById("pg-query").value.includes("resize:width=360")`)
	b.waitFor(`(() => { const i = document.getElementById("pg-preview"); return i.getAttribute("src").includes("width%3D360") && i.complete && i.naturalWidth > 0; })()`)
	b.check("playground-wide")

	// Keys: a new key with a rule that grants read-only on bob only.
	b.open(ui+"/keys", "keys")
	b.do(chromedp.SetValue(chromedp.ID("nk-public"), "viewer"), chromedp.SetValue(chromedp.ID("nk-group"), "read-only"),
		chromedp.SetValue(chromedp.ID("nk-users"), "bob"))
	b.submit(`form[action$="/keys"] button[type=submit]`, "key-created")
	viewer := key{Public: "viewer", Private: eval[string](b, `document.getElementById("created-private").value`)}
	if len(viewer.Private) != 64 {
		t.Fatalf("created key: private key %q", viewer.Private)
	}
	b.open(ui+"/keys/viewer", "key")
	// The rule editor is validated by the API: a rule without users.
	eval[chromedp.Void](b, `document.getElementById("rule-users").value = ""`)
	b.submit(`form[action$="/rules"] button[type=submit]`, "key-rule-invalid")
	if msg := b.text(".field-error"); !strings.Contains(msg, "sers") {
		t.Fatalf("invalid rule: error %q", msg)
	}
	b.open(ui+"/access?key=viewer&user=bob", "access")
	if c := b.text(".count"); !strings.Contains(c, "viewer") {
		t.Fatalf("effective access: %q", c)
	}

	// As that key, alice's images are not allowed, and the page says so.
	b.submit(`.who button[type=submit]`, "signed-out")
	signIn(viewer, "overview-viewer")
	b.open(ui+"/users/alice", "images-denied")
	if d := b.text(".notice-denied"); !strings.Contains(d, "Not allowed for viewer") {
		t.Fatalf("denied page says %q", d)
	}
	b.submit(`.who button[type=submit]`, "signed-out-viewer")
	signIn(admin, "overview")

	// Rotate, then delete.
	b.open(ui+"/keys/viewer", "key-again")
	rotate(b, "key-rotated")
	if p := eval[string](b, `document.getElementById("created-private").value`); p == viewer.Private || len(p) != 64 {
		t.Fatalf("rotated private key %q", p)
	}
	b.do(chromedp.Click(chromedp.ID("confirm-delete"), chromedp.NodeVisible))
	b.submit(`form[action$="/keys/viewer/delete"] button[type=submit]`, "key-deleted")
	if n := b.text(".notice-ok"); !strings.Contains(n, "viewer") {
		t.Fatalf("after delete: notice %q", n)
	}

	// Delete an image, after the confirmation page.
	b.open(imagePage, "image-before-delete")
	b.submit(`a[href$="/delete"]`, "image-delete-confirm")
	b.submit(`form[action$="/delete"] button[type=submit]`, "image-deleted")
	if n, c := b.text(".notice-ok"), b.text(".count"); !strings.Contains(n, imageID) || !strings.Contains(c, "27 images") {
		t.Fatalf("after deleting: notice %q, count %q", n, c)
	}

	// Filters: a folder whose module is not WebAssembly shows its load
	// error once the filters are reloaded.
	b.open(ui+"/filters", "filters")
	broken := filepath.Join(filtersDir, "broken")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"filter.json": `{"name": "broken", "version": "1.0.0", "abi": 1, "kind": "transformation"}`,
		"filter.wasm": "\x00asm but not really",
	} {
		if err := os.WriteFile(filepath.Join(broken, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.submit(`form[action$="/filters/reload"] button[type=submit]`, "filters-reloaded")
	if n, e := b.text(".notice-ok"), b.text(".filter .notice-denied"); !strings.Contains(n, "reloaded") || !strings.Contains(e, "filter.wasm") {
		t.Fatalf("after reload: notice %q, filter error %q", n, e)
	}

	// A copied session cookie works until sign-out, and never for a post
	// without the CSRF token.
	cookies, err := chromedp.Run(b.ctx, chromedp.Action[[]*network.Cookie](func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		r, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{ui + "/"}})
		return r.Cookies, err
	}))
	if err != nil {
		t.Fatal(err)
	}
	var session string
	for _, c := range cookies {
		if c.Name == "vitrine_session" {
			session = c.Value
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict {
				t.Errorf("session cookie: HttpOnly %v, SameSite %v", c.HTTPOnly, c.SameSite)
			}
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	stolen := func(method, path, form string) int {
		req, _ := http.NewRequest(method, ui+path, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: "vitrine_session", Value: session})
		r, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if st := stolen(http.MethodGet, "/", ""); st != http.StatusOK {
		t.Fatalf("session cookie before sign-out: %d", st)
	}
	mdPath := "/users/alice/images/" + imageID + "/metadata"
	for _, form := range []string{"metadata=%7B%7D", "metadata=%7B%7D&csrf=" + strings.Repeat("0", 64)} {
		if st := stolen(http.MethodPost, mdPath, form); st != http.StatusForbidden {
			t.Fatalf("form post without the right CSRF token (%s): %d, want 403", form, st)
		}
	}
	b.submit(`.who button[type=submit]`, "signed-out-admin")
	if st := stolen(http.MethodGet, "/", ""); st != http.StatusSeeOther {
		t.Fatalf("session cookie after sign-out: %d, want a redirect to sign in", st)
	}
}

// scenePNG draws a small landscape (sky, sun, two rows of hills) whose
// colours and shapes follow seed, so grids and screenshots show distinct,
// recognisable images.
func scenePNG(t *testing.T, w, h int, seed int) []byte {
	t.Helper()
	hue := float64(seed*47%360) / 360
	sky1, sky2 := hsl(hue, .55, .78), hsl(hue+.08, .6, .55)
	hill1, hill2 := hsl(hue+.33, .35, .42), hsl(hue+.38, .4, .28)
	sun := hsl(hue+.12, .9, .72)
	sx, sy, sr := float64(w)*(.2+.6*float64(seed%5)/4), float64(h)*.35, float64(h)*.12
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			fy := float64(y) / float64(h)
			c := mix(sky1, sky2, fy)
			if dx, dy := float64(x)-sx, float64(y)-sy; dx*dx+dy*dy < sr*sr {
				c = sun
			}
			fx := float64(x) / float64(w)
			if fy > .62+.08*math.Sin(fx*6+float64(seed)) {
				c = hill1
			}
			if fy > .78+.06*math.Sin(fx*9+float64(seed)*2) {
				c = hill2
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mix(a, b color.NRGBA, f float64) color.NRGBA {
	m := func(x, y uint8) uint8 { return uint8(float64(x)*(1-f) + float64(y)*f) }
	return color.NRGBA{m(a.R, b.R), m(a.G, b.G), m(a.B, b.B), 255}
}

func hsl(h, s, l float64) color.NRGBA {
	h -= math.Floor(h)
	q := l + s - l*s
	if l < .5 {
		q = l * (1 + s)
	}
	p := 2*l - q
	conv := func(t float64) uint8 {
		t -= math.Floor(t)
		v := p
		switch {
		case t < 1.0/6:
			v = p + (q-p)*6*t
		case t < .5:
			v = q
		case t < 2.0/3:
			v = p + (q-p)*(2.0/3-t)*6
		}
		return uint8(math.Round(v * 255))
	}
	return color.NRGBA{conv(h + 1.0/3), conv(h), conv(h - 1.0/3), 255}
}
