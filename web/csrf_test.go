package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/web"
)

// TestCrossOriginPostsRefused: a post the browser says came from another
// origin is refused (403) before any page runs, token or not; a post from
// the UI's own origin, or one without the browser's headers (as the other
// tests post), still works.
func TestCrossOriginPostsRefused(t *testing.T) {
	e := newEnv(t, web.Config{})
	for _, c := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"no header", nil, http.StatusSeeOther},
		{"same origin", http.Header{"Sec-Fetch-Site": {"same-origin"}}, http.StatusSeeOther},
		{"Origin of the Host", http.Header{"Origin": {e.url}}, http.StatusSeeOther},
		{"cross site", http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"same site, another origin", http.Header{"Sec-Fetch-Site": {"same-site"}}, http.StatusForbidden},
		{"Origin of another site", http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := e.browser(t)
			p := b.do(http.MethodPost, "/admin/signin", url.Values{"csrf": {b.token("/admin/signin")},
				"publicKey": {"admin"}, "privateKey": {adminPriv}, "next": {"/admin/"}}, c.header)
			if p.status != c.want {
				t.Fatalf("sign-in: %d, want %d\n%s", p.status, c.want, p.body)
			}
			signedIn := b.do(http.MethodGet, "/admin/keys", nil, nil).status == http.StatusOK
			if signedIn != (c.want == http.StatusSeeOther) {
				t.Fatalf("signed in after a sign-in answered %d: %v", p.status, signedIn)
			}
			if c.want == http.StatusForbidden && !strings.Contains(p.body, "sent from another site") {
				t.Fatalf("the refusal does not say why:\n%s", p.body)
			}
		})
	}
	t.Run("signed in", func(t *testing.T) {
		b := e.browser(t)
		b.signIn("admin", adminPriv)
		form := url.Values{"csrf": {b.token("/admin/")}}
		if p := b.do(http.MethodPost, "/admin/signout", form, http.Header{"Sec-Fetch-Site": {"cross-site"}}); p.status != http.StatusForbidden {
			t.Fatalf("cross-site sign-out with the session's token: %d, want 403", p.status)
		}
		if p := b.do(http.MethodGet, "/admin/keys", nil, nil); p.status != http.StatusOK {
			t.Fatalf("the session after a refused sign-out: %d, want 200", p.status)
		}
		if p := b.do(http.MethodPost, "/admin/signout", form, http.Header{"Sec-Fetch-Site": {"same-origin"}}); p.status != http.StatusSeeOther {
			t.Fatalf("same-origin sign-out: %d, want 303", p.status)
		}
	})
}
