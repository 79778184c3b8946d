package e2e

import (
	"strings"
	"testing"
)

// TestAdminReadOnlyKeys: on a default install (no accessControl.database)
// the keys cannot change through the API, so the Keys pages offer no form
// that would fail; they say why and how to change keys instead.
func TestAdminReadOnlyKeys(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "")
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
