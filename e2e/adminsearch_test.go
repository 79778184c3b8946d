package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAdminSearchBulk: the search grid across users, filtered by user and
// metadata, and the bulk actions on ticked tiles clicked in Chromium:
// setting a metadata key, then deleting after the confirmation page.
func TestAdminSearchBulk(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	var ids []string
	for i, user := range []string{"alice", "alice", "bob", "carol"} {
		img := scenePNG(t, 320, 240, 10+i)
		wantStatus(t, "upload for "+user, s.write(t, http.MethodPost, "/users/"+user+"/images", img, admin), http.StatusCreated)
		ids = append(ids, user+"/"+md5Hex(img))
	}
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	b.open(ui+"/search", "search")
	if n := b.count(`input[name=sel]`); n != 4 {
		t.Fatalf("search grid: %d tiles, want 4", n)
	}
	if n := b.count(`.tile-user`); n != 4 {
		t.Errorf("search tiles do not name their users (%d)", n)
	}

	// Tick two tiles, set a metadata key on them.
	b.do(chromedp.Click(chromedp.CSS(`input[value="`+ids[0]+`"]`)), chromedp.Click(chromedp.CSS(`input[value="`+ids[2]+`"]`)),
		chromedp.Click(chromedp.CSS(`.bulk-actions summary`)),
		chromedp.SetValue(chromedp.CSS("#b-key"), "album"), chromedp.SetValue(chromedp.CSS("#b-value"), `"summer"`))
	b.submit(`button[value="md-set"]`, "search-metadata-set")
	if n := b.text(".notice-ok"); !strings.Contains(n, "Set album on 2 images.") {
		t.Fatalf("after setting metadata: notice %q", n)
	}
	b.open(ui+"/search?metadata=album%3Dsummer", "search-by-metadata")
	if n := b.count(`input[name=sel]`); n != 2 {
		t.Fatalf("search by metadata: %d tiles, want 2", n)
	}
	// At 1280x800 the actions for ticked images cover no result, with
	// nothing ticked (they are not stuck to the screen) and with one
	// ticked (the page scrolls a tile clear of them).
	b.do(chromedp.EmulateViewport(1280, 800))
	if c := b.covered(".grid .tile"); len(c) > 0 {
		t.Errorf("at 1280x800 with nothing ticked, results covered: %v", c)
	}
	b.viewShot("search-by-metadata-1280x800")
	b.do(chromedp.Click(chromedp.CSS(`input[value="` + ids[0] + `"]`)))
	if c := b.covered(".grid .tile"); len(c) > 0 {
		t.Errorf("at 1280x800 with one ticked, results covered: %v", c)
	}
	b.viewShot("search-by-metadata-ticked-1280x800")
	b.do(chromedp.Click(chromedp.CSS(`input[value="`+ids[0]+`"]`)), chromedp.EmulateViewport(1280, 900))

	// Tick both, delete after the confirmation page.
	b.do(chromedp.Click(chromedp.CSS(`input[value="`+ids[0]+`"]`)), chromedp.Click(chromedp.CSS(`input[value="`+ids[2]+`"]`)))
	b.submit(`button[value="delete"]`, "bulk-delete-confirm")
	if h := b.text("h1"); h != "Delete 2 images?" {
		t.Fatalf("confirmation heading %q", h)
	}
	b.submit(`form[action$="/bulk/delete"] button[type=submit]`, "bulk-deleted")
	if n := b.text(".notice-ok"); !strings.Contains(n, "Deleted 2 images.") || !strings.Contains(b.location(), "metadata=album") {
		t.Fatalf("after deleting: notice %q at %s", n, b.location())
	}
	for _, id := range []string{ids[0], ids[2]} {
		user, img, _ := strings.Cut(id, "/")
		checkStatus(t, "deleted "+id, s.get(t, "/users/"+user+"/images/"+img, admin), http.StatusNotFound)
	}
	b.open(ui+"/search?users=carol", "search-by-user")
	if n := b.count(`input[name=sel]`); n != 1 {
		t.Fatalf("search by user: %d tiles, want 1", n)
	}
}

// TestAdminGroups: on a database store, a group is created with the
// resource picker, used by a key's rule, shown with that rule, and
// deleted after a confirmation naming the rule; with accessControl.database
// off the groups pages are read-only and say why.
func TestAdminGroups(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "accessControl:\n  database: true\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	b.open(ui+"/groups", "groups")
	b.do(chromedp.SetValue(chromedp.CSS("#ng-name"), "viewers"),
		chromedp.Click(chromedp.CSS("#ng-res-image-get")), chromedp.Click(chromedp.CSS("#ng-res-images-get")))
	b.submit(`form[action$="/groups"] button[type=submit]`, "group-created")
	if n := b.text(".notice-ok"); n != "Group created." {
		t.Fatalf("after creating a group: notice %q at %s", n, b.location())
	}
	wantStatus(t, "create ops", s.writeJSON(t, http.MethodPut, "/keys/ops", map[string]string{"privateKey": "ops-private"}, admin), http.StatusCreated)
	wantStatus(t, "rule of ops", s.writeJSON(t, http.MethodPost, "/keys/ops/access", map[string]any{"group": "viewers", "users": []string{"alice"}}, admin), http.StatusOK)
	b.open(ui+"/groups/viewers", "group-used")
	if u := b.text("#uses"); !strings.Contains(u, "ops") || !strings.Contains(u, "alice") {
		t.Fatalf("rules using viewers: %q", u)
	}
	b.do(chromedp.Click(chromedp.CSS("#eg-res-metadata-get")))
	b.submit(`form[action$="/groups/viewers"] button[type=submit]`, "group-saved")
	r := s.get(t, "/groups/viewers", admin)
	if !strings.Contains(string(r.Body), "metadata.get") {
		t.Fatalf("saved group: %s", r)
	}
	b.open(ui+"/groups/viewers/delete", "group-delete-confirm")
	if m := b.text("main .card p"); !strings.Contains(m, "The 1 rule granting it") {
		t.Fatalf("confirmation: %q", m)
	}
	b.submit(`form[action$="/delete"] button[type=submit]`, "group-deleted")
	checkStatus(t, "deleted group", s.get(t, "/groups/viewers", admin), http.StatusNotFound)

	ro := startServer(t, "accessControl:\n  database: false\n")
	admin2, _ := parseAdminKey(ro.waitOutput(t, "private key:"))
	b2 := newBrowser(t)
	b2.signIn(ro.URL+"/admin", admin2, "overview-default")
	b2.open(ro.URL+"/admin/groups", "groups-read-only")
	if n := b2.count(`#ng-name, form[action$="/groups"]`); n != 0 {
		t.Errorf("the groups page of a read-only store offers a new group")
	}
	if note := b2.text(".read-only"); !strings.Contains(note, "accessControl.database") {
		t.Errorf("read-only note: %q", note)
	}
	b2.open(ro.URL+"/admin/groups/read-only", "group-builtin")
	if n := b2.count(`form[method=post][action$="/groups/read-only"], a[href$="/delete"]`); n != 0 {
		t.Errorf("a built-in group offers changes")
	}
}

// TestAdminShortURLList: the image page lists every short URL of the
// image, made anywhere, each with its own delete button.
func TestAdminShortURLList(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	img := scenePNG(t, 320, 240, 7)
	id := md5Hex(img)
	wantStatus(t, "upload", s.write(t, http.MethodPost, "/users/alice/images", img, admin), http.StatusCreated)
	for _, q := range []string{"t[]=desaturate", "t[]=thumbnail:width=40,height=40"} {
		r := s.writeJSON(t, http.MethodPost, "/users/alice/images/"+id+"/shorturls", map[string]string{"user": "alice",
			"imageIdentifier": id, "extension": "png", "query": q}, admin)
		wantStatus(t, "short URL "+q, r, http.StatusCreated)
	}
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	b.open(ui+"/users/alice/images/"+id, "image-shorturls")
	if n := b.count("#su-list li"); n != 2 {
		t.Fatalf("short URL list: %d items, want 2", n)
	}
	if l := b.text("#su-list"); !strings.Contains(l, "desaturate") || !strings.Contains(l, "thumbnail:width=40,height=40") {
		t.Fatalf("short URL list: %q", l)
	}
	b.submit(`#su-list li:first-child button[type=submit]`, "image-shorturl-deleted")
	if n := b.count("#su-list li"); n != 1 || !strings.Contains(b.text(".notice-ok"), "deleted") {
		t.Fatalf("after deleting from the list: %d items, notice %q", n, b.text(".notice-ok"))
	}
	// The page's preview, shown twice by now, is a cached variant.
	if n := b.count("#variants tbody tr"); n < 1 {
		t.Errorf("no cached variant listed after the preview was served")
	}
	if v := b.text("#variants tbody"); !strings.Contains(v, "maxSize:height=960,width=960") || !strings.Contains(v, "webp") {
		t.Errorf("the cached variant does not name its chain and format: %q", v)
	}
	if p := b.text(".props"); !strings.Contains(p, "Frames1 (still image)") {
		t.Errorf("properties without the frame count: %q", p)
	}
}

// TestAdminPlaygroundPresets: the playground starts from a configured
// preset, picks another image of the user from its list, and shows the
// output's bytes and pixels beside the before and after images.
func TestAdminPlaygroundPresets(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "transformationPresets:\n  small-grey: [\"thumbnail:width=60,height=60\", \"desaturate\"]\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	var ids []string
	for i := range 2 {
		img := scenePNG(t, 320, 240, 20+i)
		wantStatus(t, "upload", s.write(t, http.MethodPost, "/users/alice/images", img, admin), http.StatusCreated)
		ids = append(ids, md5Hex(img))
	}
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	b.open(ui+"/playground?user=alice&image="+ids[0], "playground")
	if n := b.count("#pg-image option"); n != 2 {
		t.Fatalf("image picker: %d options, want 2", n)
	}
	// At 1280x800 the before and after previews use the width there is: at
	// least 400 px each, the 320 px image at its own size.
	b.do(chromedp.EmulateViewport(1280, 800))
	b.viewShot("playground-1280x800")
	type box struct{ Box, Img, Natural float64 }
	for _, id := range []string{"pg-before", "pg-preview"} {
		got := eval[box](b, `(() => { const i = document.getElementById("`+id+`");
			return {box: i.closest(".pg-preview").getBoundingClientRect().width, img: i.getBoundingClientRect().width, natural: i.naturalWidth}; })()`)
		if got.Box < 400 || got.Img < got.Natural {
			t.Errorf("%s at 1280 px: preview %.0f px wide, image %.0f of %.0f px", id, got.Box, got.Img, got.Natural)
		}
	}
	b.do(chromedp.EmulateViewport(1280, 900))
	b.submit(`button[value="preset"]`, "playground-preset")
	if steps := b.text(".steps"); !strings.Contains(steps, "thumbnail") || !strings.Contains(steps, "desaturate") {
		t.Fatalf("steps after the preset: %q", steps)
	}
	if size := b.text("#pg-size"); !strings.Contains(size, "bytes") || !strings.Contains(size, "px") {
		t.Fatalf("output size: %q", size)
	}
	b.do(chromedp.SetValue(chromedp.CSS("#pg-image"), ids[1]))
	b.submit(`#playground fieldset button[type=submit].btn-primary`, "playground-other-image")
	if !strings.Contains(b.location(), ids[1]) {
		t.Fatalf("after picking the other image: at %s", b.location())
	}
}
