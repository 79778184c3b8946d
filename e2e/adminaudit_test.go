package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestAdminAuditUsageSessions drives the pages an administrator watches the
// service with: the overview's charts, the keys' usage, the audit log with
// its filters, and the key's sessions with "sign out everywhere", at 1280
// and 375 px with axe-core.
func TestAdminAuditUsageSessions(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "accessControl:\n  database: true\naudit:\n  flush: 100ms\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	// Traffic through the API: a key, uploads, transformed reads (a miss,
	// then a hit), metadata and a few errors.
	wantStatus(t, "create ops", s.writeJSON(t, http.MethodPut, "/keys/ops", map[string]string{"privateKey": "ops-private"}, admin), http.StatusCreated)
	var ids []string
	for i, user := range []string{"alice", "alice", "bob"} {
		r := s.write(t, http.MethodPost, "/users/"+user+"/images", testPNG(t, 64+16*i, 48, byte(i)), admin)
		wantStatus(t, "upload", r, http.StatusCreated)
		var body struct{ ImageIdentifier string }
		r.JSON(t, &body)
		ids = append(ids, body.ImageIdentifier)
	}
	for range 2 {
		wantStatus(t, "thumbnail", s.get(t, "/users/alice/images/"+ids[0]+".png?t[]=thumbnail:width=20,height=20", admin), http.StatusOK)
	}
	wantStatus(t, "metadata", s.writeJSON(t, http.MethodPut, "/users/alice/images/"+ids[0]+"/metadata", map[string]any{"title": "Harbour <at> dusk"}, admin), http.StatusOK)
	s.get(t, "/users/alice/images/0123456789abcdef0123456789abcdef", admin)
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")

	// A change made in the UI: it goes through the API as the signed-in key.
	b.open(ui+"/filters", "filters")
	b.submit(`form[action$="/filters/reload"] button[type=submit]`, "filters-reloaded")

	time.Sleep(400 * time.Millisecond) // past a flush of the usage counters
	b.open(ui+"/", "overview-charts")
	if n := b.count("svg.chart-svg"); n < 6 {
		t.Errorf("the overview shows %d charts, want 6 (uploads, bytes, hit rate, render time, requests, storage)", n)
	}
	if d := b.text("#c-uploads-d"); !strings.Contains(d, "Uploads: 3 in all") {
		t.Errorf("the uploads chart's description is %q", d)
	}
	if n := b.count("figure[aria-labelledby=c-hits-cap] polyline, figure[aria-labelledby=c-hits-cap] circle"); n == 0 {
		t.Error("the hit-rate chart has no line")
	}

	b.open(ui+"/keys", "keys-usage")
	if n := b.count(`svg.spark[aria-label*="requests by admin"]`); n != 1 {
		t.Errorf("%d sparklines of admin's requests on the keys page", n)
	}
	// At 1280 px the list shows every column, requests per day included,
	// without scrolling the table; and each key's rules.
	if out := eval[int](b, `Array.from(document.querySelectorAll(".spark-wrap")).filter(s => {
		const box = s.closest(".table-scroll").getBoundingClientRect(), r = s.getBoundingClientRect();
		return r.right > box.right || r.left < box.left;
	}).length`); out > 0 {
		t.Errorf("%d keys' requests per day are cut off at 1280 px", out)
	}
	if rules := b.text("td.key-rules"); !strings.Contains(rules, "group all") {
		t.Errorf("admin's rules in the keys list: %q", rules)
	}

	b.open(ui+"/audit", "audit")
	log := b.text("table.audit tbody")
	for _, want := range []string{"filters.reload", "key.create", "image.create", "metadata.set", "alice/" + ids[0]} {
		if !strings.Contains(log, want) {
			t.Errorf("the audit log lacks %s:\n%s", want, log)
		}
	}
	b.do(chromedp.SetValue(chromedp.ID("a-action"), "image."))
	b.submit(`form[role=search] button[type=submit]`, "audit-filtered")
	if n := b.count("table.audit tbody tr"); n != 3 {
		t.Errorf("filtered by image changes: %d rows, want 3 uploads", n)
	}
	if !strings.Contains(b.location(), "action=image.") {
		t.Errorf("the filter is not in the URL: %s", b.location())
	}

	b.open(ui+"/sessions", "sessions")
	if cur := b.text("table tbody"); !strings.Contains(cur, "this browser") || !strings.Contains(cur, "127.0.0.1") || !strings.Contains(cur, "Chrome") {
		t.Errorf("the sessions page shows %q", cur)
	}
	b.submit(`form[action$="/sessions/signout-all"] button[type=submit]`, "signed-out-everywhere")
	if !strings.Contains(b.location(), "/signin") || !strings.Contains(b.text("main, body"), "signed out everywhere") {
		t.Errorf("after signing out everywhere: %s", b.location())
	}
	b.open(ui+"/", "after-signout")
	if !strings.Contains(b.location(), "/signin") {
		t.Errorf("still signed in after signing out everywhere: %s", b.location())
	}
}
