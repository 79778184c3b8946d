package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// TestGroups walks the groups pages without JavaScript: list, create with
// the resource picker, a refused name and resource, the rules using a
// group, edit, delete with its rules, and the built-in groups read-only.
func TestGroups(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	p := b.do(http.MethodGet, "/admin/groups", nil, nil)
	for _, want := range []string{`href="/admin/groups/read-only"`, "builtin", `id="ng-name"`, `value="image.get"`} {
		if p.status != 200 || !strings.Contains(p.body, want) {
			t.Fatalf("groups page (%d) lacks %q", p.status, want)
		}
	}
	create := func(name string, resources ...string) page {
		return b.do(http.MethodPost, "/admin/groups", url.Values{"csrf": {b.token("/admin/groups")}, "name": {name},
			"resources": resources}, nil)
	}
	t.Run("create", func(t *testing.T) {
		p := create("editors", "image.get", "metadata.put")
		if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || loc != "/admin/groups/editors?done=created" {
			t.Fatalf("create: %d %s", p.status, loc)
		}
		g, err := e.db.Group(context.Background(), "editors")
		if err != nil || strings.Join(g.Resources, " ") != "image.get metadata.put" {
			t.Fatalf("stored group: %+v %v", g, err)
		}
		p = b.follow(p)
		if !strings.Contains(p.body, "Group created.") || !strings.Contains(p.body, `value="metadata.put" checked`) ||
			!strings.Contains(p.body, `id="no-uses"`) {
			t.Fatalf("group page after create:\n%s", p.body)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		if p := create("editors", "image.get"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "exists already") {
			t.Fatalf("create again: %d", p.status)
		}
		if p := create("bad name!", "image.get"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "A group name is") {
			t.Fatalf("bad name: %d", p.status)
		}
		if p := create("typo", "image.gett"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "image.gett") {
			t.Fatalf("unknown resource: %d", p.status)
		}
		if _, err := e.db.Group(context.Background(), "typo"); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("a refused group was stored: %v", err)
		}
	})
	t.Run("uses", func(t *testing.T) {
		p := b.do(http.MethodPost, "/admin/keys", url.Values{"csrf": {b.token("/admin/keys")}, "publicKey": {"carol"},
			"group": {"editors"}, "users": {"alice"}}, nil)
		if p.status != http.StatusSeeOther {
			t.Fatalf("create key: %d", p.status)
		}
		p = b.do(http.MethodGet, "/admin/groups/editors", nil, nil)
		uses, _, _ := strings.Cut(p.body[strings.Index(p.body, `id="uses"`)+1:], "</table>")
		if !strings.Contains(uses, `href="/admin/keys/carol"`) || !strings.Contains(uses, "alice") {
			t.Fatalf("rules using editors:\n%s", uses)
		}
		if p := b.do(http.MethodGet, "/admin/groups", nil, nil); !strings.Contains(p.body, "1 rule<") {
			t.Fatalf("the list does not count the rule using editors")
		}
	})
	t.Run("edit", func(t *testing.T) {
		p := b.do(http.MethodPost, "/admin/groups/editors", url.Values{"csrf": {b.token("/admin/groups/editors")},
			"resources": {"images.get"}}, nil)
		if p.status != http.StatusSeeOther {
			t.Fatalf("save: %d", p.status)
		}
		if g, err := e.db.Group(context.Background(), "editors"); err != nil || strings.Join(g.Resources, " ") != "images.get" {
			t.Fatalf("stored group after edit: %+v %v", g, err)
		}
		p = b.do(http.MethodPost, "/admin/groups/editors", url.Values{"csrf": {b.token("/admin/groups/editors")},
			"resources": {"images.gett"}}, nil)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="eg-error"`) {
			t.Fatalf("edit with an unknown resource: %d", p.status)
		}
	})
	t.Run("delete", func(t *testing.T) {
		p := b.do(http.MethodGet, "/admin/groups/editors/delete", nil, nil)
		if p.status != 200 || !strings.Contains(p.body, "The 1 rule granting it will be deleted too") {
			t.Fatalf("confirm delete: %d\n%s", p.status, p.body)
		}
		p = b.do(http.MethodPost, "/admin/groups/editors/delete", url.Values{"csrf": {b.token("/admin/groups/editors/delete")}}, nil)
		if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || loc != "/admin/groups?deleted=editors" {
			t.Fatalf("delete: %d %s", p.status, loc)
		}
		if _, err := e.db.Group(context.Background(), "editors"); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("group left after delete: %v", err)
		}
		if rules, err := e.db.Rules(context.Background(), "carol"); err != nil || len(rules) != 0 {
			t.Fatalf("rules of carol after the group went: %+v %v", rules, err)
		}
	})
	t.Run("builtin is read-only", func(t *testing.T) {
		p := b.do(http.MethodGet, "/admin/groups/read-write", nil, nil)
		if p.status != 200 || !strings.Contains(p.body, "built-in groups") || strings.Contains(p.body, `method="post"`+` action="/admin/groups/read-write"`) ||
			strings.Contains(p.body, "/admin/groups/read-write/delete") {
			t.Fatalf("built-in group page: %d\n%s", p.status, p.body)
		}
		if p := b.do(http.MethodGet, "/admin/groups/nope", nil, nil); p.status != http.StatusNotFound || !strings.Contains(p.body, "<nav") {
			t.Fatalf("unknown group: %d", p.status)
		}
	})
}
