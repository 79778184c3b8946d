package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// TestImageGridMetadataFilter filters a user's grid by metadata: the count
// follows the filter, the field keeps its value, and both the UI's own and
// the API's errors show next to the field.
func TestImageGridMetadataFilter(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	if p := b.uploadForm("alice", pngBytes(t, 1), pngBytes(t, 2), pngBytes(t, 3)); p.status != http.StatusSeeOther {
		t.Fatalf("upload: %d", p.status)
	}
	ctx := context.Background()
	all, err := e.db.Images(ctx, storage.Query{Users: []string{"alice"}, Sort: []storage.SortKey{{Field: "imageIdentifier"}}})
	if err != nil || len(all.Images) != 3 {
		t.Fatalf("stored: %+v %v", all, err)
	}
	for i, md := range []map[string]any{{"color": "red", "n": 3}, {"color": "red", "n": 4}, {"color": "blue"}} {
		if err := e.db.SetMetadata(ctx, "alice", all.Images[i].Identifier, md); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, field string
		status      int
		want        string
	}{
		{"none", "", 200, "<strong>3 images</strong>"},
		{"one pair", "color=red", 200, "<strong>2 images</strong>"},
		{"comma separated", "color=red, n=3", 200, "<strong>1 image</strong>"},
		{"one per line", "color = red\nn=4", 200, "<strong>1 image</strong>"},
		{"no match", "color=green", 200, "No images match."},
		{"not key=value", "color", 400, `id="f-metadata-error" class="field-error" role="alert">Metadata filter &#34;color&#34; must be key=value`},
		{"API error", "=red", 400, `id="f-metadata-error" class="field-error" role="alert">Invalid metadata filter metadata[]: the key must not be empty`},
		{"API limit", "a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1,j=1,k=1", 400, `role="alert">Too many metadata filters`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := b.do(http.MethodGet, "/admin/users/alice?"+url.Values{"metadata": {c.field}}.Encode(), nil, nil)
			if p.status != c.status || !strings.Contains(p.body, c.want) {
				t.Fatalf("%d, want %d and %q in\n%s", p.status, c.status, c.want, p.body)
			}
			if c.field != "" && !strings.Contains(p.body, ">"+htmlText(c.field)+"</textarea>") {
				t.Fatalf("the field lost its value %q", c.field)
			}
		})
	}
}

// htmlText escapes s as templ does in text.
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// TestGridCount: the count line appears only when the listing answered,
// and a page past the last one says so and leads back.
func TestGridCount(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	b.uploadForm("alice", pngBytes(t, 1), pngBytes(t, 2), pngBytes(t, 3))
	for _, c := range []struct {
		name, query string
		status      int
		want, not   []string
	}{
		{"first page", "", 200, []string{"<strong>3 images</strong> match · page 1 of 1"}, nil},
		{"invalid filter", "metadata=color", 400, []string{`id="f-metadata-error"`}, []string{`class="count"`, "page 1 of 0"}},
		{"past the last page", "page=999", 404, []string{"There is no page 999: the matches fill 1 page.", `href="/admin/users/alice?page=1&amp;sort=added%3Adesc"`},
			[]string{"page 999 of", "No images match"}},
		{"nothing matches", "ids=nope", 200, []string{"<strong>0 images</strong> match", "No images match."}, []string{"page 1 of"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := b.do(http.MethodGet, "/admin/users/alice?"+c.query, nil, nil)
			if p.status != c.status {
				t.Errorf("status %d, want %d", p.status, c.status)
			}
			for _, w := range c.want {
				if !strings.Contains(p.body, w) {
					t.Errorf("no %q in the page", w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(p.body, n) {
					t.Errorf("%q in the page", n)
				}
			}
		})
	}
}
