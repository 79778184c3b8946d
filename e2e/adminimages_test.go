package e2e

import (
	"net/http"
	"strings"
	"testing"
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
