package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/cdn"
)

// TestCacheTags checks the tags of every tagged answer (api/cdn/README.md, "CDN")
// in the three default headers, and that errors and writes carry none.
func TestCacheTags(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testConfig())
	id := e.upload(pngImage(t, 40, 30, 1))
	r := e.signed(http.MethodPost, "/users/alice/images/"+id+"/shorturls", userKey, userPriv,
		[]byte(`{"user": "alice", "imageIdentifier": "`+id+`", "extension": "png", "query": "?t[]=thumbnail:width=10"}`))
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("short URL: %d %s", r.StatusCode, r.body)
	}
	sid, _ := r.json(t)["id"].(string)

	var tags cdn.Tags
	all, user, img := tags.All(), tags.User("alice"), tags.Image("alice", id)
	listing := tags.Listing("alice")
	keyAlice, keyReader, keyAdmin := tags.Key(userKey), tags.Key(roKey), tags.Key(adminKey)
	for _, c := range []struct {
		name, path, priv string
		headers          []string
		method           string
		want             []string // nil: no tags
	}{
		{"original", "/users/alice/images/" + id, userPriv, nil, "", []string{all, user, img, keyAlice}},
		{"with extension", "/users/alice/images/" + id + ".png", userPriv, nil, "", []string{all, user, img, keyAlice}},
		{"transformed", "/users/alice/images/" + id + ".jpg?t[]=thumbnail:width=10", userPriv, nil, "", []string{all, user, img, keyAlice}},
		{"another key", "/users/alice/images/" + id + "?publicKey=reader", roPriv, nil, "", []string{all, user, img, keyReader}},
		{"head", "/users/alice/images/" + id, userPriv, nil, http.MethodHead, []string{all, user, img, keyAlice}},
		{"not modified", "/users/alice/images/" + id, userPriv, []string{"If-None-Match", "*"}, "", []string{all, user, img, keyAlice}},
		{"metadata", "/users/alice/images/" + id + "/metadata", userPriv, nil, "", []string{all, user, img, keyAlice}},
		{"short URLs", "/users/alice/images/" + id + "/shorturls", userPriv, nil, "", []string{all, user, img, keyAlice}},
		{"short URL", "/users/alice/images/" + id + "/shorturls/" + sid, userPriv, nil, "", []string{all, user, img, keyAlice}},
		{"short URL image", "/s/" + sid, "", nil, "", []string{all, user, img}},
		{"listing", "/users/alice/images", userPriv, nil, "", []string{all, user, listing, keyAlice}},
		{"user", "/users/alice", userPriv, nil, "", []string{all, user, listing, keyAlice}},
		{"across users", "/images?publicKey=admin", adminPriv, nil, "", []string{all, tags.Listings(), keyAdmin}},
		{"naming users", "/images?publicKey=admin&users[]=bob&users[]=alice", adminPriv, nil, "",
			[]string{all, tags.User("alice"), tags.Listing("alice"), tags.User("bob"), tags.Listing("bob"), keyAdmin}},
		{"not found", "/users/alice/images/0123456789abcdef0123456789abcdef", userPriv, nil, "", nil},
		{"refused", "/users/alice/images/" + id + "?publicKey=reader", userPriv, nil, "", nil},
		{"untagged route", "/keys/alice/access", userPriv, nil, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := e.url + c.path
			if c.priv != "" {
				u = e.tokenURL(c.path, c.priv)
			}
			method := c.method
			if method == "" {
				method = http.MethodGet
			}
			r := e.request(method, u, nil, c.headers...)
			if r.StatusCode >= 400 && c.want != nil {
				t.Fatalf("%s: %d %s", c.path, r.StatusCode, r.body)
			}
			checkTags(t, r.Header, c.want)
		})
	}

	t.Run("writes", func(t *testing.T) {
		r := e.signed(http.MethodPut, "/users/alice/images/"+id+"/metadata", userKey, userPriv, []byte(`{"a": 1}`))
		if r.StatusCode != http.StatusOK {
			t.Fatalf("PUT metadata: %d %s", r.StatusCode, r.body)
		}
		checkTags(t, r.Header, nil)
	})
}

// checkTags checks the three default headers against want (nil: none).
func checkTags(t *testing.T, h http.Header, want []string) {
	t.Helper()
	for name, sep := range map[string]string{"Surrogate-Key": " ", "Cache-Tag": ",", "Xkey": " "} {
		got := h.Get(name)
		if got != strings.Join(want, sep) {
			t.Errorf("%s: %q, want %q", name, got, strings.Join(want, sep))
		}
	}
}

// TestCacheTagsConfig checks a prefix of one's own and the headers turned
// off.
func TestCacheTagsConfig(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.CDN = cdn.Tags{Prefix: "shop.", Headers: map[string]string{"Edge-Tag": cdn.Comma}}
	e := newEnv(t, cfg)
	id := e.upload(pngImage(t, 20, 20, 2))
	r := e.get(e.tokenURL("/users/alice/images/"+id, userPriv))
	want := "shop.all,shop.user:alice,shop.image:alice/" + id + ",shop.key:alice"
	if got := r.Header.Get("Edge-Tag"); got != want {
		t.Errorf("Edge-Tag %q, want %q", got, want)
	}
	if r.Header.Get("Surrogate-Key") != "" {
		t.Error("Surrogate-Key sent although tagHeaders names only Edge-Tag")
	}

	cfg.CDN = cdn.Tags{Headers: map[string]string{}}
	e = newEnv(t, cfg)
	id = e.upload(pngImage(t, 20, 20, 3))
	r = e.get(e.tokenURL("/users/alice/images/"+id, userPriv))
	if r.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", r.StatusCode, r.body)
	}
	checkTags(t, r.Header, nil)

	cfg.CDN = cdn.Tags{Prefix: "a b"}
	if _, err := api.New(cfg, api.Deps{}); err == nil || !strings.Contains(err.Error(), "cdn.tagPrefix") {
		t.Errorf("a prefix with a space: %v, want an error naming cdn.tagPrefix", err)
	}
}
