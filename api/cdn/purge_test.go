package cdn

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestPurgeTags(t *testing.T) {
	t.Parallel()
	var d Tags
	img, user := "users/alice/images/0a1b", "users/alice"
	imageTags := []string{d.Image("alice", "0a1b"), d.Listing("alice"), d.Listings()}
	for _, c := range []struct {
		typ, subject, data string
		want               []string
	}{
		{"io.vitrine.image.added", img, `{"user": "alice", "imageIdentifier": "0a1b", "width": 10}`,
			[]string{d.Listing("alice"), d.Listings()}},
		{"io.vitrine.image.deleted", img, `{"user": "alice", "imageIdentifier": "0a1b", "bytes": 10}`, imageTags},
		{"io.vitrine.metadata.replaced", img, `{"user": "alice", "imageIdentifier": "0a1b", "keys": ["poi"]}`, imageTags},
		{"io.vitrine.metadata.merged", img, `{}`, imageTags},
		{"io.vitrine.metadata.deleted", img, ``, imageTags},
		{"io.vitrine.shorturl.deleted", img, `{"id": "abcdefg"}`, imageTags},
		// The subject is what counts; the data stands in when it is of
		// another shape.
		{"io.vitrine.image.deleted", "somewhere", `{"user": "alice", "imageIdentifier": "0a1b"}`, imageTags},
		{"io.vitrine.image.deleted", "somewhere", `{"user": "alice"}`, []string{d.All()}},
		{"io.vitrine.image.added", "", `not json`, []string{d.All()}},
		{"io.vitrine.key.updated", "keys/frontend", `{"publicKey": "frontend"}`, []string{d.Key("frontend")}},
		{"io.vitrine.key.deleted", "keys/frontend", `{"publicKey": "frontend"}`, []string{d.Key("frontend")}},
		{"io.vitrine.rule.deleted", "keys/frontend", `{"publicKey": "frontend", "id": 3}`, []string{d.Key("frontend")}},
		{"io.vitrine.rule.deleted", "", `{"publicKey": "frontend", "id": 3}`, []string{d.Key("frontend")}},
		{"io.vitrine.rule.deleted", "", `{"id": 3}`, []string{d.All()}},
		{"io.vitrine.group.updated", "groups/readers", `{"group": "readers", "resources": ["image.get"]}`, []string{d.All()}},
		{"io.vitrine.group.deleted", "groups/readers", `{"group": "readers"}`, []string{d.All()}},
		{"io.vitrine.user.erased", user, `{"user": "alice"}`, []string{d.User("alice"), d.Listings()}},
		{"io.vitrine.user.erased", "", `{"user": "alice"}`, []string{d.User("alice"), d.Listings()}},
		{"io.vitrine.user.erased", "", `{}`, []string{d.All()}},
		{"io.vitrine.quota.updated", user, `{"user": "alice", "images": 10}`, []string{d.Listing("alice")}},
		{"io.vitrine.quota.updated", "", `{}`, []string{d.All()}},
		// Changes that only grant, or that no cached response shows.
		{"io.vitrine.shorturl.created", img, `{"id": "abcdefg"}`, nil},
		{"io.vitrine.key.created", "keys/frontend", `{}`, nil},
		{"io.vitrine.rule.created", "keys/frontend", `{"id": 3, "users": ["alice"]}`, nil},
		{"io.vitrine.group.created", "groups/readers", `{}`, nil},
		{"io.vitrine.filters.reloaded", "filters", `{}`, nil},
		{"io.vitrine.unknown.thing", img, `{}`, nil},
	} {
		got := d.PurgeTags(c.typ, c.subject, json.RawMessage(c.data))
		if !slices.Equal(got, c.want) {
			t.Errorf("PurgeTags(%s, %q, %s) = %q, want %q", c.typ, c.subject, c.data, got, c.want)
		}
	}
}

// TestPurgeTagsPrefix checks that purges name the tags responses carry
// under a configured prefix.
func TestPurgeTagsPrefix(t *testing.T) {
	t.Parallel()
	p := Tags{Prefix: "shop-"}
	got := p.PurgeTags("io.vitrine.image.deleted", "users/bob/images/x", nil)
	want := []string{"shop-image:bob/x", "shop-images:bob", "shop-images"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
