package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAdminReadOnlyKeys: with accessControl.database turned off the keys
// cannot change through the API, so the Keys pages offer no form that would
// fail; they say why and how to change keys instead.
func TestAdminReadOnlyKeys(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "accessControl:\n  database: false\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")

	b.open(ui+"/keys", "keys-read-only")
	if n := b.count(`form[action$="/admin/keys"], #nk-public`); n != 0 {
		t.Errorf("the Keys page offers a new key (%d form elements) though keys are read-only", n)
	}
	note := b.text(".read-only")
	for _, want := range []string{"accessControl.database", "vitrine keys"} {
		if !strings.Contains(note, want) {
			t.Errorf("the read-only note %q does not mention %s", note, want)
		}
	}

	b.open(ui+"/keys/admin", "key-read-only")
	for _, sel := range []string{`form[action$="/rules"]`, `form[action*="/rules/"]`, `form[action$="/rotate"]`,
		`a[href$="/rotate"]`, `form[action$="/delete"]`} {
		if n := b.count(sel); n != 0 {
			t.Errorf("the key page of a read-only store has %s", sel)
		}
	}
	if note := b.text(".read-only"); !strings.Contains(note, "accessControl.database") {
		t.Errorf("the key page's read-only note: %q", note)
	}
	if rules := b.text(`table`); !strings.Contains(rules, "group all") {
		t.Errorf("the key's rules are not listed: %q", rules)
	}
}

// TestAdminSessionsOfChangedKeys: rotating the signed-in key keeps the
// browser signed in (with the new private key); a key rotated or deleted
// elsewhere ends its sessions cleanly, on the sign-in page with a message.
func TestAdminSessionsOfChangedKeys(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "accessControl:\n  database: true\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	ops := key{Public: "ops", Private: "ops-private"}
	wantStatus(t, "create ops", s.writeJSON(t, http.MethodPut, "/keys/ops", map[string]string{"privateKey": ops.Private}, admin), http.StatusCreated)
	wantStatus(t, "rule of ops", s.writeJSON(t, http.MethodPost, "/keys/ops/access", map[string]any{"group": "all", "users": "*"}, admin), http.StatusOK)
	ui := s.URL + "/admin"
	b.signIn(ui, ops, "overview")

	// Rotating one's own key: the new private key is shown once, the rules
	// stay listed, and the session goes on with the new key.
	b.open(ui+"/keys/ops", "key")
	rotate(b, "key-rotated")
	ops.Private = eval[string](b, `document.getElementById("created-private").value`)
	if len(ops.Private) != 64 {
		t.Fatalf("rotated private key %q", ops.Private)
	}
	if rules := b.text("table"); !strings.Contains(rules, "group all") {
		t.Fatalf("after rotating the signed-in key the rules are %q, want group all listed", rules)
	}
	checkStatus(t, "read with the new private key", s.get(t, "/keys/ops/access", ops), http.StatusOK)
	b.open(ui+"/keys", "keys-after-rotation")
	if h := b.text("h1"); h != "Keys & access" {
		t.Fatalf("after rotating the signed-in key /admin/keys shows %q at %s", h, b.location())
	}

	// Rotated elsewhere: the next page is the sign-in page, with a message.
	wantStatus(t, "rotate ops elsewhere", s.writeJSON(t, http.MethodPut, "/keys/ops", map[string]string{"privateKey": "elsewhere"}, admin), http.StatusOK)
	b.open(ui+"/keys", "session-ended-rotated")
	if loc := b.location(); !strings.Contains(loc, "/admin/signin") {
		t.Fatalf("a session of a rotated key went on at %s", loc)
	}
	if n := b.text(".notice"); !strings.Contains(n, "rotated or deleted") {
		t.Fatalf("sign-in page after the key was rotated says %q", n)
	}
	b.signIn(ui, key{Public: "ops", Private: "elsewhere"}, "keys-signed-in-again")
	if h := b.text("h1"); h != "Keys & access" {
		t.Fatalf("signing in again went to %q at %s, want back to the keys", h, b.location())
	}

	// Deleted elsewhere: the same.
	wantStatus(t, "delete ops elsewhere", s.write(t, http.MethodDelete, "/keys/ops", nil, admin), http.StatusOK)
	b.open(ui+"/", "session-ended-deleted")
	if loc, n := b.location(), b.text(".notice"); !strings.Contains(loc, "/admin/signin") || !strings.Contains(n, "rotated or deleted") {
		t.Fatalf("a session of a deleted key: at %s, notice %q", loc, n)
	}
}

// rotate rotates the key whose page is open, through its confirmation
// page.
func rotate(b *browser, name string) {
	b.t.Helper()
	b.submit(`a[href$="/rotate"]`, name+"-confirm")
	b.submit(`form[action$="/rotate"] button[type=submit]`, name)
}

// TestAdminRestrictedKey: a key that may only read alice's images sees
// those images and its own access, and none of the forms it could not use
// (metadata, short URLs, deletion, upload, new key, rules, reload).
func TestAdminRestrictedKey(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "accessControl:\n  database: true\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	viewer := key{Public: "viewer", Private: "viewer-private"}
	wantStatus(t, "create viewer", s.writeJSON(t, http.MethodPut, "/keys/viewer", map[string]string{"privateKey": viewer.Private}, admin), http.StatusCreated)
	wantStatus(t, "rule of viewer", s.writeJSON(t, http.MethodPost, "/keys/viewer/access", map[string]any{"group": "read-only", "users": []string{"alice"}}, admin), http.StatusOK)
	img := scenePNG(t, 320, 240, 7)
	wantStatus(t, "upload", s.write(t, http.MethodPost, "/users/alice/images", img, admin), http.StatusCreated)
	wantStatus(t, "metadata", s.writeJSON(t, http.MethodPut, "/users/alice/images/"+md5Hex(img)+"/metadata", map[string]string{"title": "harbour"}, admin), http.StatusOK)
	ui := s.URL + "/admin"
	b.signIn(ui, viewer, "overview")
	none := func(page string, sels ...string) {
		t.Helper()
		for _, sel := range sels {
			if n := b.count(sel); n != 0 {
				t.Errorf("%s offers %s to a read-only key", page, sel)
			}
		}
	}
	nav := `nav a[href$="/upload"], nav a[href$="/filters"]`
	none("the overview", nav, `main a[href$="/upload"]`)

	b.open(ui+"/users/alice", "images")
	none("the grid", `a[href*="/upload"]`)
	b.submit(`.grid .tile a`, "image")
	none("the image page", `form[action$="/metadata"]`, `form[action$="/shorturls"]`, `form[action$="/shorturls/delete"]`, `a[href$="/delete"]`)
	if md := b.text("pre.code"); !strings.Contains(md, "harbour") {
		t.Errorf("the image's metadata is not shown to a key that may read it: %q", md)
	}

	b.open(ui+"/upload", "upload-denied")
	none("the upload page", `#upload-form`)
	if d := b.text(".notice-denied"); !strings.Contains(d, "images.post") {
		t.Errorf("the upload page says %q", d)
	}

	b.open(ui+"/keys", "keys")
	none("the keys page", `#nk-public`, `form[action$="/keys"]`)
	if n := b.count(".notice-denied"); n != 0 {
		t.Errorf("the keys page shows %d refusals: %s", n, b.text(".notice-denied"))
	}
	b.submit(`main a[href$="/keys/viewer"]`, "key")
	none("the key page", `form[action$="/rules"]`, `form[action*="/rules/"]`, `form[action$="/rotate"]`, `a[href$="/rotate"]`, `form[action$="/delete"]`)
	if rules := b.text("table"); !strings.Contains(rules, "group read-only") {
		t.Errorf("own rules: %q", rules)
	}
	b.submit(`main a[href*="/access?key=viewer"]`, "access")
	if d := b.text(".notice-denied"); d != "" {
		t.Errorf("the key's own effective access is refused: %q", d)
	}
	var group struct{ Resources []string }
	s.get(t, "/groups/read-only", admin).JSON(t, &group)
	if c := b.text(".count"); !strings.Contains(c, fmt.Sprintf("viewer may use %d of", len(group.Resources))) {
		t.Errorf("own effective access: %q; the group read-only has %d resources", c, len(group.Resources))
	}
	if ok := b.text("table.access"); !strings.Contains(ok, "images") || !strings.Contains(ok, "delete") {
		t.Errorf("effective access table: %q", ok)
	}

	b.open(ui+"/filters", "filters")
	none("the filters page", `form[action$="/filters/reload"]`)
}

// TestAdminConfirmAndReload: rotating a key and deleting a rule each ask
// first, on a page of their own (no JavaScript needed), and change nothing
// until confirmed; every form post answers with a redirect, so reloading
// the page it leads to posts nothing again (no second rotation, no "exists
// already"), and a new private key is shown only once.
func TestAdminConfirmAndReload(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "accessControl:\n  database: true\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	rules := func() int {
		t.Helper()
		var list []any
		r := s.get(t, "/keys/ops/access", admin)
		wantStatus(t, "rules of ops", r, http.StatusOK)
		r.JSON(t, &list)
		return len(list)
	}
	reload := func(name string) {
		t.Helper()
		b.open(b.location(), name)
	}
	posted := func(what string) {
		t.Helper()
		if loc := b.location(); !strings.Contains(loc, "done=") {
			t.Fatalf("%s: at %s, want the page a redirect leads to", what, loc)
		}
	}

	// A new key: its page shows the private key once; a reload neither
	// posts again nor shows the key again.
	b.open(ui+"/keys", "keys")
	b.do(chromedp.SetValue(chromedp.ID("nk-public"), "ops"), chromedp.SetValue(chromedp.ID("nk-group"), "read-only"),
		chromedp.SetValue(chromedp.ID("nk-users"), "ops"))
	b.submit(`form[action$="/keys"] button[type=submit]`, "key-created")
	posted("new key")
	ops := key{Public: "ops", Private: eval[string](b, `document.getElementById("created-private").value`)}
	checkStatus(t, "the new key", s.get(t, "/keys/ops/access", ops), http.StatusOK)
	reload("key-created-reloaded")
	if n := b.count("#created-private, .field-error"); n != 0 || b.text("h1") != "Key ops" {
		t.Fatalf("reloading the new key's page: h1 %q, %d private key or error fields", b.text("h1"), n)
	}

	// A rule added, then deleted after its confirmation page.
	b.do(chromedp.SetValue(chromedp.ID("rule-group"), "read-write"), chromedp.SetValue(chromedp.ID("rule-users"), "bob"))
	b.submit(`form[action$="/rules"] button[type=submit]`, "rule-added")
	posted("new rule")
	if n := rules(); n != 2 {
		t.Fatalf("%d rules, want 2", n)
	}
	b.submit(`a[aria-label^="Delete rule"]`, "rule-delete-confirm")
	if h := b.text("h1"); !strings.Contains(h, "Delete rule") {
		t.Fatalf("deleting a rule went to %q, want a confirmation page", h)
	}
	if n := rules(); n != 2 {
		t.Fatalf("the confirmation page deleted the rule already (%d rules)", n)
	}
	b.submit(`main a.btn-quiet`, "rule-delete-cancelled")
	if n := rules(); n != 2 || b.text("h1") != "Key ops" {
		t.Fatalf("cancelled: %d rules, at %q", n, b.text("h1"))
	}
	eval[chromedp.Void](b, `document.querySelectorAll('a[aria-label^="Delete rule"]')[1].id = "second-rule"`)
	b.submit(`#second-rule`, "rule-delete-confirm-again")
	b.submit(`form[action*="/rules/"] button[type=submit]`, "rule-deleted")
	posted("rule deleted")
	if n := rules(); n != 1 {
		t.Fatalf("after deleting: %d rules, want 1", n)
	}

	// Rotation asks first; after it, a reload rotates nothing.
	b.submit(`a[href$="/rotate"]`, "rotate-confirm")
	if h := b.text("h1"); !strings.Contains(h, "Rotate") {
		t.Fatalf("rotating went to %q, want a confirmation page", h)
	}
	checkStatus(t, "the key before confirming", s.get(t, "/keys/ops/access", ops), http.StatusOK)
	b.submit(`form[action$="/rotate"] button[type=submit]`, "rotated")
	posted("rotation")
	old := ops
	ops.Private = eval[string](b, `document.getElementById("created-private").value`)
	if ops.Private == old.Private || len(ops.Private) != 64 {
		t.Fatalf("rotated private key %q", ops.Private)
	}
	reload("rotated-reloaded")
	if n := b.count("#created-private"); n != 0 {
		t.Fatalf("reloading shows the private key again")
	}
	checkStatus(t, "the rotated key after a reload", s.get(t, "/keys/ops/access", ops), http.StatusOK)
	checkStatus(t, "the old private key", s.get(t, "/keys/ops/access", old), http.StatusBadRequest)

	// Filters reloaded: the result is a page of its own.
	b.open(ui+"/filters", "filters")
	b.submit(`form[action$="/filters/reload"] button[type=submit]`, "filters-reloaded")
	posted("filter reload")
	if n := b.text(".notice-ok"); !strings.Contains(n, "reloaded") {
		t.Fatalf("after reloading filters: notice %q", n)
	}
}

// TestAdminRulePicker: a rule's resources are picked from those that
// exist, not typed; the ticks survive a rule the API refuses.
func TestAdminRulePicker(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "accessControl:\n  database: true\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	wantStatus(t, "create ops", s.writeJSON(t, http.MethodPut, "/keys/ops", map[string]string{"privateKey": "ops-private"}, admin), http.StatusCreated)
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	b.open(ui+"/keys/ops", "key")
	if n := b.count(`input[name=resources]:not([type=checkbox])`); n != 0 {
		t.Fatalf("resources are typed into %d text fields", n)
	}
	if n := b.count(`input[type=checkbox][name=resources]`); n < 50 {
		t.Fatalf("the picker offers %d resources", n)
	}
	b.do(chromedp.Click(chromedp.CSS(`.picker summary`), chromedp.NodeVisible))
	tick := func(res string) {
		t.Helper()
		b.do(chromedp.Click(chromedp.ID("rule-res-"+res), chromedp.NodeVisible))
	}
	// Both a group and resources: the API's message, the ticks kept.
	tick("image-get")
	tick("images-get")
	b.do(chromedp.SetValue(chromedp.ID("rule-users"), "alice"))
	b.submit(`form[action$="/rules"] button[type=submit]`, "rule-refused")
	if e := b.text(".field-error"); !strings.Contains(e, "Both resources and group") {
		t.Fatalf("a rule with a group and resources: error %q", e)
	}
	if n := b.count(`input[name=resources]:checked`); n != 2 {
		t.Fatalf("%d resources still ticked, want 2", n)
	}
	b.do(chromedp.SetValue(chromedp.ID("rule-group"), ""))
	b.submit(`form[action$="/rules"] button[type=submit]`, "rule-added")
	var rules []struct {
		Resources []string `json:"resources"`
		Users     []string `json:"users"`
	}
	r := s.get(t, "/keys/ops/access", admin)
	r.JSON(t, &rules)
	if len(rules) != 1 || strings.Join(rules[0].Resources, ",") != "image.get,images.get" || strings.Join(rules[0].Users, ",") != "alice" {
		t.Fatalf("rules of ops: %s", r.Body)
	}
}
