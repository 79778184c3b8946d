package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/api"
)

// TestResponseTypes: every field of the answers the admin UI reads has
// its place in the api's exported type, so a field the API adds cannot be
// lost to clients decoding into those types (web does).
func TestResponseTypes(t *testing.T) {
	e := newEnv(t, mutableConfig())
	admin := func(method, path, body string) response {
		t.Helper()
		r := e.signed(method, path, adminKey, adminPriv, []byte(body))
		if r.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, r.StatusCode, r.body)
		}
		return r
	}
	up := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, pngImage(t, 12, 10, 3))
	var uploaded api.Uploaded
	if err := json.Unmarshal(up.body, &uploaded); err != nil || uploaded.ImageIdentifier == "" {
		t.Fatalf("upload: %v %s", err, up.body)
	}
	img := "/users/alice/images/" + uploaded.ImageIdentifier
	admin(http.MethodPut, img+"/metadata", `{"color":"red","n":{"deep":[1,2]}}`)
	admin(http.MethodPost, img+"/shorturls", fmt.Sprintf(`{"user":"alice","imageIdentifier":%q,"extension":"png","query":"?t[]=desaturate"}`, uploaded.ImageIdentifier))
	admin(http.MethodPost, img+"/shorturls", fmt.Sprintf(`{"user":"alice","imageIdentifier":%q}`, uploaded.ImageIdentifier))
	if r := e.get(e.tokenURL(img+".png?t[]=desaturate", userPriv)); r.StatusCode != 200 {
		t.Fatalf("variant: %d", r.StatusCode)
	}
	admin(http.MethodPut, "/keys/bob", `{"privateKey":"bob-1"}`)
	admin(http.MethodPut, "/groups/viewers", `["image.get"]`)
	admin(http.MethodPost, "/keys/bob/access", `[{"group":"viewers","users":["alice"]},{"resources":["image.get"],"users":"*"}]`)
	var shortURLs api.ShortURLList
	cases := []struct {
		name, path string
		into       any
	}{
		{"listing", "/users/alice/images?metadata=1", &api.Listing{}},
		{"global listing", "/images?metadata=1&fields[]=imageIdentifier&fields[]=user&fields[]=phash", &api.Listing{}},
		{"groups", "/groups", &api.GroupList{}},
		{"group", "/groups/viewers", &api.Group{}},
		{"keys", "/keys", &api.KeyList{}},
		{"rules", "/keys/bob/access", &[]api.Rule{}},
		{"rules expanded", "/keys/bob/access?expandGroups=1", &[]api.Rule{}},
		{"audit", "/audit", &api.AuditList{}},
		{"usage", "/usage?metric=key.requests", &api.Usage{}},
		{"short URLs", img + "/shorturls", &shortURLs},
		{"variants", img + "/variants", &api.VariantList{}},
		{"filters", "/filters", &api.FilterList{}},
		{"status", "/status", &api.Status{}},
		{"stats", "/stats", &api.Stats{}},
		{"user", "/users/alice", &api.User{}},
		{"quota", "/users/alice/quota", &api.UserQuota{}},
		{"error", "/users/alice/images/nope/metadata", &api.ErrorBody{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.get(e.tokenURL(tc.path+sep(tc.path)+"publicKey="+adminKey, adminPriv))
			if tc.name != "error" && r.StatusCode != 200 {
				t.Fatalf("GET %s: %d %s", tc.path, r.StatusCode, r.body)
			}
			strictDecode(t, r.body, tc.into)
		})
	}
	t.Run("short URL", func(t *testing.T) {
		if len(shortURLs.ShortURLs) != 2 {
			t.Fatalf("short URLs: %+v", shortURLs)
		}
		r := e.get(e.tokenURL(img+"/shorturls/"+shortURLs.ShortURLs[0].ID+"?publicKey="+adminKey, adminPriv))
		strictDecode(t, r.body, &api.ShortURL{})
	})
}

func sep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}

// strictDecode decodes body into v, failing on a field v has no place for.
func strictDecode(t *testing.T, body []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%T cannot hold %s: %v", v, body, err)
	}
}

// TestMetadataIfMatch: a PUT of metadata with If-Match replaces it only
// while GET still answers that ETag, so a change made between a client's
// read and its write is not lost: the write is refused with 412.
func TestMetadataIfMatch(t *testing.T) {
	e := newEnv(t, testConfig())
	path := "/users/alice/images/" + e.upload(pngImage(t, 10, 10, 4)) + "/metadata"
	put := func(body, ifMatch string) response {
		t.Helper()
		var h []string
		if ifMatch != "" {
			h = []string{"If-Match", ifMatch}
		}
		return e.signed(http.MethodPut, path, userKey, userPriv, []byte(body), h...)
	}
	read := func() (string, string) {
		t.Helper()
		r := e.get(e.tokenURL(path, userPriv))
		return string(r.body), r.Header.Get("ETag")
	}
	put(`{"a":1,"gone":true}`, "")
	_, stale := read()
	if r := e.signed(http.MethodPost, path, userKey, userPriv, []byte(`{"b":2}`)); r.StatusCode != 200 {
		t.Fatalf("concurrent merge: %d %s", r.StatusCode, r.body)
	}
	doc, fresh := read()
	steps := []struct {
		name, body, ifMatch string
		status              int
		want                string // the metadata after the step
	}{
		{"stale ETag", `{"a":1}`, stale, http.StatusPreconditionFailed, doc},
		{"one of several ETags", `{"a":1,"b":2}`, `"nope", ` + fresh, http.StatusOK, `{"a":1,"b":2}`},
		{"the ETag just used is stale now", `{}`, fresh, http.StatusPreconditionFailed, `{"a":1,"b":2}`},
		{"any", `{"c":3}`, "*", http.StatusOK, `{"c":3}`},
		{"unconditional", `{"d":4}`, "", http.StatusOK, `{"d":4}`},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := put(s.body, s.ifMatch)
			if r.StatusCode != s.status {
				t.Fatalf("PUT: %d %s, want %d", r.StatusCode, r.body, s.status)
			}
			if s.status == http.StatusPreconditionFailed && r.errMessage(t) != "Metadata changed since it was read" {
				t.Errorf("message %q", r.errMessage(t))
			}
			if got, _ := read(); got != s.want {
				t.Errorf("metadata %s, want %s", got, s.want)
			}
		})
	}
}
