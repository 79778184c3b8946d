package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAdminUsersWithoutStats: an administrator whose address may not read
// /stats (statsAllow) still sees every user with images, with counts: the
// users list comes from what the key may read.
func TestAdminUsersWithoutStats(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "statsAllow: [192.0.2.1]\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	for i, user := range []string{"alice", "alice", "bob", "carol", "carol", "carol"} {
		r := s.write(t, http.MethodPost, "/users/"+user+"/images", testPNG(t, 40, 30, byte(i)), admin)
		wantStatus(t, "upload for "+user, r, http.StatusCreated)
	}
	if r := s.get(t, "/stats", admin); r.Status != http.StatusForbidden {
		t.Fatalf("/stats from loopback: %s, want 403 (statsAllow)", r)
	}
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	b.open(ui+"/users", "users")
	got := eval[string](b, `Array.from(document.querySelectorAll("table tbody tr")).map(r => r.innerText.replace(/\s+/g, " ").trim()).join("; ")`)
	if want := "alice 2; bob 1; carol 3"; got != want {
		t.Fatalf("users: %q, want %q", got, want)
	}
	if n := b.text("main .muted"); strings.Contains(n, "No users") {
		t.Fatalf("users page says %q", n)
	}
}

// TestAdminShortURLs: a short URL made on the image page is shown with a
// delete button (no id to type); any short URL of the image is found by
// pasting its address or id; an unknown one is said next to the field, on
// the image page with its navigation.
func TestAdminShortURLs(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	img := scenePNG(t, 320, 240, 2)
	id := md5Hex(img)
	wantStatus(t, "upload", s.write(t, http.MethodPost, "/users/alice/images", img, admin), http.StatusCreated)
	r := s.writeJSON(t, http.MethodPost, "/users/alice/images/"+id+"/shorturls", map[string]string{"user": "alice",
		"imageIdentifier": id, "extension": "gif", "query": "t[]=desaturate"}, admin)
	wantStatus(t, "short URL through the API", r, http.StatusCreated)
	var made struct{ ID string }
	r.JSON(t, &made)
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	page := ui + "/users/alice/images/" + id

	// Made here: shown after the post, with its own delete button.
	b.open(page, "image")
	b.do(chromedp.SetValue(chromedp.ID("su-query"), "t[]=thumbnail:width=40,height=40"), chromedp.SetValue(chromedp.ID("su-ext"), "png"))
	b.submit(`form[action$="/shorturls"] button[type=submit]`, "shorturl-created")
	short := eval[string](b, `document.getElementById("short-url").value`)
	if !strings.Contains(b.location(), "short=") || !strings.Contains(short, "/s/") {
		t.Fatalf("after creating a short URL: at %s, short URL %q", b.location(), short)
	}
	if q := b.text("#shorturl dl"); !strings.Contains(q, "thumbnail:width=40,height=40") || !strings.Contains(q, "png") {
		t.Errorf("the new short URL's transformations and format: %q", q)
	}
	b.submit(`#shorturl form[action$="/shorturls/delete"] button[type=submit]`, "shorturl-deleted")
	if n := b.text(".notice-ok"); !strings.Contains(n, "deleted") {
		t.Fatalf("after deleting: notice %q", n)
	}
	if r := s.do(t, http.MethodGet, short, nil, nil); r.Status != http.StatusNotFound {
		t.Fatalf("deleted short URL %s: %d", short, r.Status)
	}

	// Made elsewhere: found by its address, then deleted.
	b.do(chromedp.SetValue(chromedp.ID("su-find"), s.URL+"/s/"+made.ID))
	b.submit(`form[role=search] button[type=submit]`, "shorturl-found")
	if q := b.text("#shorturl dl"); !strings.Contains(q, "desaturate") || !strings.Contains(q, "gif") {
		t.Fatalf("found short URL: %q", q)
	}
	b.submit(`#shorturl form[action$="/shorturls/delete"] button[type=submit]`, "shorturl-found-deleted")
	if r := s.do(t, http.MethodGet, "/s/"+made.ID, nil, nil); r.Status != http.StatusNotFound {
		t.Fatalf("deleted short URL %s: %d", made.ID, r.Status)
	}

	// Unknown: an error next to the field, on a page with navigation.
	b.do(chromedp.SetValue(chromedp.ID("su-find"), made.ID))
	b.submit(`form[role=search] button[type=submit]`, "shorturl-unknown")
	if e := b.text("#su-find-error"); !strings.Contains(e, made.ID) {
		t.Fatalf("unknown short URL: error %q", e)
	}
	if n := b.count(`nav a`); n == 0 || b.text("h1") == "That did not work" {
		t.Fatalf("an unknown short URL ends on a page without navigation")
	}
}

// TestAdminUploadFormats: the upload page names the types the
// configuration allows, as GET /status lists them: here PNG and TIFF
// (uploads.formats) and SVG (uploads.svg).
func TestAdminUploadFormats(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "uploads:\n  formats: [png, tif]\n  svg: true\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	b.open(ui+"/upload", "upload")
	if h := b.text("#up-types"); h != "PNG, TIFF or SVG; several at once." {
		t.Fatalf("upload hint %q", h)
	}
	if a := eval[string](b, `document.getElementById("up-files").accept`); a != ".png,image/png,.tif,image/tiff,.svg,image/svg+xml" {
		t.Fatalf("file input accepts %q", a)
	}
}

// TestAdminErrorPages: pages that cannot be shown (an unknown key, a name
// that cannot be a user's, a page past the grid's last) say what is
// missing and keep the navigation.
func TestAdminErrorPages(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	wantStatus(t, "upload", s.write(t, http.MethodPost, "/users/alice/images", scenePNG(t, 200, 150, 4), admin), http.StatusCreated)
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	for _, c := range []struct{ path, name, want string }{
		{"/keys/nobody", "unknown-key", "There is no key nobody."},
		{"/users/bad%20name", "bad-user-name", "cannot be a user name"},
		{"/users/alice?page=999", "page-past-the-last", "There is no page 999"},
	} {
		b.open(ui+c.path, c.name)
		if m := b.text(".notice-denied"); !strings.Contains(m, c.want) {
			t.Errorf("%s says %q, want %q", c.path, m, c.want)
		}
		if n := b.count(`nav[aria-label=Main] a`); n == 0 {
			t.Errorf("%s has no navigation", c.path)
		}
	}
}

// TestAdminGridOnPhone: on a phone's first screen the grid's images show,
// not just its filter form, which stays folded until a filter is set.
func TestAdminGridOnPhone(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	for i := range 6 {
		wantStatus(t, "upload", s.write(t, http.MethodPost, "/users/alice/images", scenePNG(t, 200, 150, 10+i), admin), http.StatusCreated)
	}
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	b.open(ui+"/users/alice", "images")
	b.do(chromedp.EmulateViewport(375, 740))
	if top := eval[float64](b, `document.querySelector(".grid .tile").getBoundingClientRect().top`); top > 740-120 {
		t.Errorf("on a 375×740 screen the first image starts at %.0f px, below the first screen", top)
	}
	b.do(chromedp.EmulateViewport(1280, 900))
	if open := eval[bool](b, `document.querySelector(".more-filters").open`); open {
		t.Errorf("the filters are open with none set")
	}
	b.open(ui+"/users/alice?checksums=nope", "images-filtered")
	if open := eval[bool](b, `document.querySelector(".more-filters").open`); !open {
		t.Errorf("the filters are folded while one is set")
	}
	if v := eval[string](b, `document.getElementById("f-checksums").value`); v != "nope" {
		t.Errorf("checksum filter field: %q", v)
	}
}
