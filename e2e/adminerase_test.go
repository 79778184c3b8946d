package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestAdminErase drives a user's erasure in chromium: the user's page
// offers it, the confirmation refuses a name that is not the user's, the
// user's name starts it, and the erasure's page follows it by itself
// (reloading while it runs) to done, with the receipt's download. Every
// page is checked with axe-core.
func TestAdminErase(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "erasure:\n  interval: 1s\naudit:\n  flush: 1s\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	for i := range 3 {
		wantStatus(t, "upload", s.write(t, http.MethodPost, "/users/carol/images", scenePNG(t, 160, 120, i), admin), http.StatusCreated)
	}
	ui := s.URL + "/admin"
	b.open(ui+"/signin", "signin")
	b.signIn(ui, admin, "overview")

	b.open(ui+"/users/carol", "user")
	b.submit(`a[href$="/users/carol/erase"]`, "erase-confirm")
	if p := b.text(".card p"); !strings.Contains(p, "3 images") {
		t.Fatalf("confirmation says %q, want the 3 images counted", p)
	}
	b.do(chromedp.SetValue(chromedp.ID("erase-confirm"), "carl"))
	b.submit(`form[action$="/users/carol/erase"] button[type=submit]`, "erase-wrong-name")
	if msg := b.text("#erase-confirm-error"); msg != "Type the user name, carol, to confirm." {
		t.Fatalf("a wrong name: error %q", msg)
	}
	b.do(chromedp.SetValue(chromedp.ID("erase-confirm"), "carol"))
	b.submit(`form[action$="/users/carol/erase"] button[type=submit]`, "erasure-running")
	if !strings.HasSuffix(b.location(), "/admin/users/carol/erasure") {
		t.Fatalf("after the confirmation: at %s", b.location())
	}
	waitAcrossReloads(t, b, `document.readyState === "complete" && document.querySelector("#erasure-state") !== null &&
		document.querySelector("#erasure-state").textContent.startsWith("Done")`)
	b.check("erasure-done")
	if n := b.count(`a[href$="/users/carol/erasure/receipt"][download]`); n != 1 {
		t.Fatalf("%d receipt links on the finished erasure's page", n)
	}
	if c := b.text("#counts"); !strings.Contains(c, "images") {
		t.Fatalf("counts: %q", c)
	}
}

// waitAcrossReloads waits until expr is true in the page, which reloads
// itself meanwhile (a Refresh header): an evaluation the reload cuts off
// is tried again on the next document.
func waitAcrossReloads(t *testing.T, b *browser, expr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("browser: %s did not hold within 60s (at %s)", expr, b.location())
}
