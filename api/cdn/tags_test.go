package cdn

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestTagNames(t *testing.T) {
	t.Parallel()
	var d Tags
	p := Tags{Prefix: "shop."}
	for _, c := range []struct{ got, want string }{
		{d.All(), "vitrine-all"},
		{d.User("alice"), "vitrine-user:alice"},
		{d.Image("alice", "0a1b"), "vitrine-image:alice/0a1b"},
		{d.Listing("alice"), "vitrine-images:alice"},
		{d.Listings(), "vitrine-images"},
		{d.Key("front_end-1"), "vitrine-key:front_end-1"},
		{p.Image("bob", "x"), "shop.image:bob/x"},
		// Bytes outside a name's own are escaped, so that no name can
		// make a space, a comma or another tag's separator.
		{d.User("a b,c/d:e%"), "vitrine-user:a%20b%2Cc%2Fd%3Ae%25"},
		{d.Image("a/b", "c"), "vitrine-image:a%2Fb/c"},
	} {
		if c.got != c.want {
			t.Errorf("tag %q, want %q", c.got, c.want)
		}
	}
}

// TestTagCharacters checks api/cdn/README.md's rule on every kind of tag built
// from hostile names: no byte that Fastly, Cloudflare or xkey would split
// on or refuse.
func TestTagCharacters(t *testing.T) {
	t.Parallel()
	var d Tags
	hostile := "a b,c\t\"é\x00;"
	for _, tag := range []string{d.All(), d.User(hostile), d.Image(hostile, hostile), d.Listing(hostile),
		d.Listings(), d.Key(hostile)} {
		if strings.Trim(tag, alnum+"_.-:/%") != "" {
			t.Errorf("tag %q has a byte outside the documented set", tag)
		}
	}
}

func TestTagsSet(t *testing.T) {
	t.Parallel()
	tags := []string{"vitrine-all", "vitrine-user:alice"}
	for _, c := range []struct {
		name    string
		headers map[string]string
		want    http.Header
	}{
		{"defaults", nil, http.Header{
			"Surrogate-Key": {"vitrine-all vitrine-user:alice"},
			"Cache-Tag":     {"vitrine-all,vitrine-user:alice"},
			"Xkey":          {"vitrine-all vitrine-user:alice"},
		}},
		{"off", map[string]string{}, http.Header{}},
		{"one", map[string]string{"Edge-Tags": Comma}, http.Header{"Edge-Tags": {"vitrine-all,vitrine-user:alice"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			Tags{Headers: c.headers}.Set(h, tags)
			if len(h) != len(c.want) {
				t.Fatalf("headers %v, want %v", h, c.want)
			}
			for k, v := range c.want {
				if !slices.Equal(h[k], v) {
					t.Errorf("%s: %q, want %q", k, h[k], v)
				}
			}
		})
	}
}

func TestTagsValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		tags Tags
		bad  string // a part of the error; "" for none
	}{
		{"zero", Tags{}, ""},
		{"prefix", Tags{Prefix: "img.cdn:"}, ""},
		{"prefix with a space", Tags{Prefix: "my tags"}, "cdn.tagPrefix"},
		{"prefix with a comma", Tags{Prefix: "a,b"}, "cdn.tagPrefix"},
		{"prefix too long", Tags{Prefix: strings.Repeat("a", 65)}, "cdn.tagPrefix"},
		{"separator", Tags{Headers: map[string]string{"xkey": "tab"}}, "want space or comma"},
		{"header name", Tags{Headers: map[string]string{"Cache Tag": Comma}}, "not a header name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.tags.Validate()
			if c.bad == "" && err != nil || c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
				t.Errorf("Validate() = %v, want an error with %q", err, c.bad)
			}
		})
	}
}

// TestTagHeadersOff checks the configuration's way of turning the headers
// off: `tagHeaders: {}` decodes to an empty map, not to nil (the defaults).
func TestTagHeadersOff(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"tagHeaders: {}", `{"tagHeaders": {}}`} {
		var tags Tags
		if err := yaml.Unmarshal([]byte(doc), &tags); err != nil {
			t.Fatal(err)
		}
		if tags.Sent() {
			t.Errorf("%s: tags still sent (headers %#v)", doc, tags.Headers)
		}
	}
	var tags Tags
	if err := yaml.Unmarshal([]byte("tagPrefix: x-"), &tags); err != nil {
		t.Fatal(err)
	}
	if !tags.Sent() {
		t.Error("without tagHeaders, no tags are sent")
	}
}
