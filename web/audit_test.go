package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// TestAuditPage: a change made in the UI is in the audit log as made by the
// signed-in key from the browser's address, and the page filters and
// refuses a malformed date with a 400 and the API's message.
func TestAuditPage(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	p := b.do(http.MethodPost, "/admin/keys", url.Values{"csrf": {b.token("/admin/keys")}, "publicKey": {"carol"},
		"privateKey": {"carol-private"}, "group": {"read-only"}, "users": {"carol"}}, nil)
	if p.status != http.StatusSeeOther {
		t.Fatalf("create key: %d", p.status)
	}
	if _, err := e.db.PutGroup(storage.WithActor(context.Background(), storage.Actor{Key: "cli"}),
		storage.Group{Name: "g", Resources: []string{"image.get"}}); err != nil {
		t.Fatal(err)
	}
	p = b.do(http.MethodGet, "/admin/audit", nil, nil)
	row := regexp.MustCompile(`<td[^>]*>admin</td><td[^>]*>127\.0\.0\.1</td><td[^>]*>key\.create</td><td[^>]*>carol</td>`)
	if p.status != 200 || !row.MatchString(p.body) || !strings.Contains(p.body, "rule.create") || !strings.Contains(p.body, "3 entries") {
		t.Fatalf("audit page (%d) lacks the UI's changes:\n%s", p.status, p.body)
	}
	if p := b.do(http.MethodGet, "/admin/audit?actor=cli", nil, nil); !strings.Contains(p.body, "1 entries") || !strings.Contains(p.body, "group.create") {
		t.Fatalf("filtered by key cli:\n%s", p.body)
	}
	if p := b.do(http.MethodGet, "/admin/audit?action=key.", nil, nil); !strings.Contains(p.body, "1 entries") {
		t.Fatalf("filtered by action key.:\n%s", p.body)
	}
	if p := b.do(http.MethodGet, "/admin/audit?since=last+week", nil, nil); p.status != http.StatusBadRequest || !strings.Contains(p.body, "Invalid &#39;since&#39;") {
		t.Fatalf("malformed date: %d\n%s", p.status, p.body)
	}
	// A key that may not read the log does not see the page in the menu
	// and gets a 403 that says why.
	r := e.browser(t)
	r.signIn("carol", "carol-private")
	if p := r.do(http.MethodGet, "/admin/", nil, nil); strings.Contains(p.body, `href="/admin/audit"`) {
		t.Fatal("the navigation offers the audit log to a read-only key")
	}
	if p := r.do(http.MethodGet, "/admin/audit", nil, nil); p.status != http.StatusForbidden {
		t.Fatalf("read-only key on the audit page: %d", p.status)
	}
}

// TestSessionsPage lists a key's sessions with address and browser, signs
// one out, then every one.
func TestSessionsPage(t *testing.T) {
	e := newEnv(t, web.Config{})
	one, two := e.browser(t), e.browser(t)
	one.signIn("admin", adminPriv)
	two.signIn("admin", adminPriv)
	p := one.do(http.MethodGet, "/admin/sessions", nil, nil)
	forms := regexp.MustCompile(`action="(/admin/sessions/[0-9a-f]{16}/signout)"`).FindAllStringSubmatch(p.body, -1)
	if p.status != 200 || len(forms) != 2 || strings.Count(p.body, "this browser") != 1 || !strings.Contains(p.body, "Go-http-client") {
		t.Fatalf("sessions page (%d) with %d sign-out forms:\n%s", p.status, len(forms), p.body)
	}
	// Sign out the session that is not this browser's.
	other := forms[0][1]
	if strings.Contains(p.body[strings.Index(p.body, other)-400:strings.Index(p.body, other)], "this browser") {
		other = forms[1][1]
	}
	p = one.do(http.MethodPost, other, url.Values{"csrf": {one.token("/admin/sessions")}}, nil)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/admin/sessions?done=one" {
		t.Fatalf("sign out one: %d %s", p.status, p.header.Get("Location"))
	}
	if p := two.do(http.MethodGet, "/admin/", nil, nil); p.status != http.StatusSeeOther {
		t.Fatalf("the signed-out session still works: %d", p.status)
	}
	if p := one.do(http.MethodGet, "/admin/", nil, nil); p.status != 200 {
		t.Fatalf("this browser's session went too: %d", p.status)
	}
	if p := one.do(http.MethodPost, "/admin/sessions/0123456789abcdef/signout", url.Values{"csrf": {one.token("/admin/sessions")}}, nil); p.status != http.StatusNotFound {
		t.Fatalf("unknown session: %d", p.status)
	}
	two.signIn("admin", adminPriv)
	p = one.do(http.MethodPost, "/admin/sessions/signout-all", url.Values{"csrf": {one.token("/admin/sessions")}}, nil)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/admin/signin?out=all" {
		t.Fatalf("sign out everywhere: %d %s", p.status, p.header.Get("Location"))
	}
	for i, b := range []*browser{one, two} {
		if p := b.do(http.MethodGet, "/admin/", nil, nil); p.status != http.StatusSeeOther {
			t.Fatalf("browser %d still signed in: %d", i+1, p.status)
		}
	}
	if p := one.do(http.MethodPost, "/admin/sessions/signout-all", nil, nil); p.status == http.StatusSeeOther && p.header.Get("Location") == "/admin/signin?out=all" {
		t.Fatal("sign out everywhere without a session or CSRF token")
	}
}

// TestUsageOnKeysAndOverview: the keys page shows a key's rules, creation,
// last use and requests per day, and the overview its charts, from the
// counters the API keeps, starting at the first day with counts.
func TestUsageOnKeysAndOverview(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	b.do(http.MethodPost, "/admin/keys", url.Values{"csrf": {b.token("/admin/keys")}, "publicKey": {"carol"},
		"privateKey": {"carol-private"}, "group": {"read-only"}, "users": {"carol"}}, nil)
	b.do(http.MethodGet, "/admin/", nil, nil)
	if err := e.usage.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := b.do(http.MethodGet, "/admin/keys", nil, nil)
	spark := regexp.MustCompile(`aria-label="(\d+) requests by admin in the last 14 days"`).FindStringSubmatch(p.body)
	if spark == nil || spark[1] == "0" {
		t.Fatalf("no sparkline of admin's requests on the keys page:\n%s", p.body)
	}
	// Each key's rules, and its requests per day in numbers beside the
	// sparkline.
	if !regexp.MustCompile(`<span class="mono">group read-only</span> <span class="muted">for</span> <span class="mono">carol</span>`).MatchString(p.body) {
		t.Errorf("the keys list does not show carol's rule:\n%s", p.body)
	}
	if !regexp.MustCompile(`\d+ in all, \d+\.\d a day`).MatchString(p.body) {
		t.Errorf("the keys list does not show requests per day:\n%s", p.body)
	}
	today := e.clock.Now().UTC().Format("2006-01-02")
	if strings.Count(p.body, today) < 2 { // carol created, admin last used
		t.Fatalf("created and last used dates (%s) missing:\n%s", today, p.body)
	}
	p = b.do(http.MethodGet, "/admin/", nil, nil)
	for _, want := range []string{`<title id="c-requests-t">Requests and errors by status</title>`, `<desc id="c-requests-d">`,
		`role="img" aria-labelledby="c-requests-t c-requests-d"`, `<circle class="chart-dot series-0"`, "Uploads per day"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
	// Today is the only day with counts: the charts start there, not at
	// days before the service counted anything, drawn as 0 %.
	data := pngBytes(t, 9)
	b.uploadForm("alice", data)
	page := b.do(http.MethodGet, "/admin/users/alice/images/"+md5Hex(data), nil, nil)
	src := regexp.MustCompile(`<figure class="preview card"><img src="([^"]+)"`).FindStringSubmatch(page.body)
	if src == nil {
		t.Fatal("no preview on the image page")
	}
	for range 2 { // a miss, then a hit
		r, err := http.Get(strings.ReplaceAll(src[1], "&amp;", "&"))
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("preview: %v %v", r, err)
		}
		r.Body.Close()
	}
	if err := e.usage.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	p = b.do(http.MethodGet, "/admin/", nil, nil)
	md := today[5:]
	for _, want := range []string{`<desc id="c-requests-d">Requests and errors by status, ` + md + ` to ` + md + `.`,
		`<desc id="c-hits-d">Variant cache hit rate, ` + md + ` to ` + md + `. Hit rate highest 50 % on ` + md + `.`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
	_, hits, _ := strings.Cut(p.body, `id="c-hits-d"`)
	hits, _, _ = strings.Cut(hits, "</figure>")
	if strings.Contains(hits, ">0 %</td>") {
		t.Errorf("the hit rate of a day without variant requests is drawn as 0 %%:\n%s", hits)
	}
}
