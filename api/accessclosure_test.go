package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/api"
)

// TestRulesWithinTheGrantersUsers: a key whose rules reach only alice
// cannot give a key (itself or another) a rule on bob or on "*", with
// POST /keys/<pk>/access or PUT /keys/<pk> with access; a rule on alice
// it may give.
func TestRulesWithinTheGrantersUsers(t *testing.T) {
	cfg := testConfig()
	cfg.AccessControl.Database = true
	cfg.AccessControl.Keys = append(cfg.AccessControl.Keys, api.ConfigKey{PublicKey: "limited", PrivateKey: "limited-secret",
		Rules: []api.ConfigRule{{Users: api.Users{"alice"}, Group: "all"}}})
	e := newEnv(t, cfg)
	if r := e.admin(http.MethodPut, "/keys/target", `{"privateKey": "target-private-key-0123"}`); r.StatusCode >= 300 {
		t.Fatalf("PUT /keys/target: %d %s", r.StatusCode, r.body)
	}
	as := func(method, path, body string) response {
		return e.signed(method, path, "limited", "limited-secret", []byte(body), "Content-Type", "application/json")
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/keys/target/access", `[{"users": "*", "group": "all"}]`},
		{http.MethodPost, "/keys/target/access", `[{"users": ["alice", "bob"], "resources": ["image.get"]}]`},
		{http.MethodPut, "/keys/newkey", `{"privateKey": "newkey-private-key-0123", "access": [{"users": "*", "group": "all"}]}`},
	} {
		r := as(c.method, c.path, c.body)
		if r.StatusCode != http.StatusBadRequest || !strings.HasPrefix(r.errMessage(t), "Permission denied (public key)") {
			t.Errorf("%s %s %s: %d %s, want a refusal", c.method, c.path, c.body, r.StatusCode, r.body)
		}
	}
	if r := as(http.MethodPost, "/keys/target/access", `[{"users": ["alice"], "resources": ["image.get"]}]`); r.StatusCode != http.StatusOK {
		t.Errorf("a rule on alice: %d %s", r.StatusCode, r.body)
	}
}
