package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// setFile puts a file (name and bytes) into the file input sel, as
// choosing it in the browser's dialog does.
func setFile(b *browser, sel, name string, data []byte) {
	b.t.Helper()
	s, _ := json.Marshal(sel)
	n, _ := json.Marshal(name)
	eval[chromedp.Void](b, `(() => {
		const bin = atob("`+base64.StdEncoding.EncodeToString(data)+`"), bytes = new Uint8Array(bin.length);
		for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
		const dt = new DataTransfer();
		dt.items.add(new File([bytes], `+string(n)+`));
		document.querySelector(`+string(s)+`).files = dt.files;
	})()`)
}

// TestAdminFilterDeploy uploads versions of a filter on the Filters page,
// sees a version that does not compile refused with the reason, compares
// the versions and rolls back to the first.
func TestAdminFilterDeploy(t *testing.T) {
	examples := exampleFilters(t)
	b := newBrowser(t)
	s := startServer(t, "accessControl:\n  database: true\nfilters:\n  syncInterval: 200ms\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	ui := s.URL + "/admin"
	b.open(ui+"/", "signin")
	b.signIn(ui, admin, "overview")
	b.open(ui+"/filters", "filters-empty")

	upload := func(dir, name string) {
		t.Helper()
		m, err := os.ReadFile(filepath.Join(dir, "filter.json"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.ReadFile(filepath.Join(dir, "filter.wasm"))
		if err != nil {
			t.Fatal(err)
		}
		setFile(b, `#deploy-form input[name=manifest]`, "filter.json", m)
		setFile(b, `#deploy-form input[name=module]`, "filter.wasm", w)
		b.submit(`#deploy-form button[type=submit]`, name)
	}
	grey := duotoneVersion(t, examples, "1.0.0", "000000", "ffffff")
	red := duotoneVersion(t, examples, "2.0.0", "ff0000", "ff0000")
	upload(grey, "filters-first-version")
	if n := b.text(".notice-ok"); !strings.Contains(n, "uploaded") {
		t.Fatalf("after the first upload: notice %q", n)
	}
	upload(red, "filters-second-version")
	if n := b.count("#deployed-duotone table.versions tbody tr"); n != 2 {
		t.Fatalf("%d versions listed, want 2", n)
	}
	if got := b.text("#deployed-duotone tbody tr:first-child td:nth-child(2)"); got != "2.0.0" {
		t.Fatalf("the newest version's manifest says %q, want 2.0.0", got)
	}

	// Compare: the form offers the active version (2.0.0) against the one
	// before it, and lists the manifest fields in which they differ.
	b.submit(`#deployed-duotone .compare-form button[type=submit]`, "filters-compare")
	rows := eval[[]string](b, `[...document.querySelectorAll("#deployed-duotone table.compare tbody tr")]`+
		`.map(r => [...r.cells].map(c => c.textContent.trim()).join(" | "))`)
	var manifestRows []string
	for _, r := range rows {
		if !strings.HasPrefix(r, "uploaded") { // the two uploads' times may differ, or not
			manifestRows = append(manifestRows, r)
		}
	}
	if want := []string{`params.dark.default | "ff0000" | "000000"`, `params.light.default | "ff0000" | "ffffff"`,
		`version | "2.0.0" | "1.0.0"`}; !slices.Equal(manifestRows, want) {
		t.Fatalf("compared 2.0.0 with 1.0.0: rows %q, want %q (and at most the upload times)", rows, want)
	}

	broken := filepath.Join(t.TempDir(), "duotone")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	m, _ := os.ReadFile(filepath.Join(grey, "filter.json"))
	_ = os.WriteFile(filepath.Join(broken, "filter.json"), m, 0o644)
	_ = os.WriteFile(filepath.Join(broken, "filter.wasm"), []byte("\x00asm but not really"), 0o644)
	upload(broken, "filters-refused")
	if e := b.text("#deploy-error"); !strings.Contains(e, "filter.wasm") {
		t.Fatalf("a module that does not compile: error %q, want the reason", e)
	}
	if n := b.count("#deployed-duotone table.versions tbody tr"); n != 2 {
		t.Fatalf("after a refused upload %d versions are listed, want 2", n)
	}

	// Roll back to the first version: the older row's button.
	b.submit(`#deployed-duotone tbody tr:nth-child(2) form button[type=submit]`, "filters-rolled-back")
	if n := b.text(".notice-ok"); !strings.Contains(n, "rolled back") {
		t.Fatalf("after the rollback: notice %q", n)
	}
	if got := b.text("#deployed-duotone tbody tr:nth-child(2) .badge-ok"); got != "Active" {
		t.Fatalf("after the rollback the first version is not the active one: %q", got)
	}

	// A canary at 50% of images, then off; disable and enable everywhere.
	canary := eval[string](b, `document.querySelector("#deployed-duotone select[name=version] option:nth-child(2)").value`)
	b.do(chromedp.SetValue(chromedp.CSS(`#deployed-duotone select[name=version]`), canary),
		chromedp.SetValue(chromedp.CSS(`#deployed-duotone input[name=percent]`), "50"))
	b.submit(`#deployed-duotone .canary-form button[type=submit]`, "filters-canary")
	if got := b.text("#deployed-duotone .block-head .badge:not(.badge-ok)"); !strings.Contains(got, "50%") {
		t.Fatalf("after setting the canary: badge %q", got)
	}
	b.submit(`#deployed-duotone form[action$="/enabled"] button[type=submit]`, "filters-disabled")
	if got := b.text("#deployed-duotone .badge-bad"); got != "Disabled" {
		t.Fatalf("after disabling: %q", got)
	}
	b.submit(`#deployed-duotone form[action$="/enabled"] button[type=submit]`, "filters-enabled")
	if got := b.text("#deployed-duotone .block-head .badge-ok"); got != "Enabled" {
		t.Fatalf("after enabling: %q", got)
	}
}
