package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestListingsMetadataFilter checks the metadata[<key>]=<value> extension
// on both listings, its hits, its errors, and that it leaves the plain
// metadata parameter alone.
func TestListingsMetadataFilter(t *testing.T) {
	e := newEnv(t, testConfig())
	docs := []string{`{"color":"red","n":3,"ok":true}`, `{"color":"red","n":1.50,"ok":false}`, `{"color":"blue"}`, ``}
	var ids []string
	for i, doc := range docs {
		id := e.upload(pngImage(t, 10+i, 10, uint8(i)))
		ids = append(ids, id)
		if doc != "" {
			if r := e.signed(http.MethodPut, "/users/alice/images/"+id+"/metadata", userKey, userPriv, []byte(doc)); r.StatusCode != 200 {
				t.Fatalf("set metadata: %d %s", r.StatusCode, r.body)
			}
		}
	}
	list := func(path, priv, query string) (hits float64, got []string, images []any) {
		t.Helper()
		r := e.get(e.tokenURL(path+query, priv))
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d %s", query, r.StatusCode, r.body)
		}
		m := r.json(t)
		images = m["images"].([]any)
		for _, img := range images {
			got = append(got, img.(map[string]any)["imageIdentifier"].(string))
		}
		return m["search"].(map[string]any)["hits"].(float64), got, images
	}
	for _, c := range []struct {
		name, query string
		want        []int
	}{
		{"string", "metadata[color]=red", []int{1, 0}},
		{"number", "metadata[n]=3", []int{0}},
		{"decimal as written", "metadata[n]=1.50", []int{1}},
		{"decimal not normalised", "metadata[n]=1.5", nil},
		{"true", "metadata[ok]=true", []int{0}},
		{"false", "metadata[ok]=false", []int{1}},
		{"missing key", "metadata[size]=red", nil},
		{"two pairs ANDed", "metadata[color]=red&metadata[ok]=true", []int{0}},
		{"escaped brackets", url.QueryEscape("metadata[color]") + "=blue", []int{2}},
		{"with ids", "ids[]=" + ids[0] + "&ids[]=" + ids[2] + "&metadata[color]=red", []int{0}},
		{"with paging", "limit=1&metadata[color]=red", []int{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var want []string
			for _, i := range c.want {
				want = append(want, ids[i])
			}
			wantHits := len(want)
			if strings.Contains(c.query, "limit=1") {
				wantHits = 2
			}
			hits, got, _ := list("/users/alice/images?", userPriv, c.query)
			if strings.Join(got, ",") != strings.Join(want, ",") || int(hits) != wantHits {
				t.Fatalf("per user: %v (%v hits), want %v (%d hits)", got, hits, want, wantHits)
			}
			hits, got, _ = list("/images?publicKey=admin&", adminPriv, c.query)
			if strings.Join(got, ",") != strings.Join(want, ",") || int(hits) != wantHits {
				t.Fatalf("global: %v (%v hits), want %v (%d hits)", got, hits, want, wantHits)
			}
		})
	}
	t.Run("plain metadata still toggles inclusion", func(t *testing.T) {
		_, got, images := list("/users/alice/images?", userPriv, "metadata=1&metadata[color]=blue")
		if len(got) != 1 || images[0].(map[string]any)["metadata"].(map[string]any)["color"] != "blue" {
			t.Fatalf("metadata=1 with a filter: %v", images)
		}
		_, _, images = list("/users/alice/images?", userPriv, "metadata[color]=blue")
		if _, ok := images[0].(map[string]any)["metadata"]; ok {
			t.Fatalf("a filter alone included metadata: %v", images)
		}
	})
	many := ""
	for i := range 11 {
		many += "&metadata[k" + string(rune('a'+i)) + "]=v"
	}
	for q, msg := range map[string]string{
		"metadata[]=red":     "Invalid metadata filter metadata[]: the key must not be empty",
		"metadata[a][b]=red": "Invalid metadata filter metadata[a][b]: use metadata[<key>]=<value>",
		"metadata[a=red":     "Invalid metadata filter metadata[a: use metadata[<key>]=<value>",
		"metadata[" + strings.Repeat("k", 256) + "]=v": "Invalid metadata filter metadata[" + strings.Repeat("k", 256) + "]: the key must be valid UTF-8 of at most 255 bytes",
		"metadata[k]=" + strings.Repeat("v", 1025):     "Invalid metadata filter metadata[k]: the value must be valid UTF-8 of at most 1024 bytes",
		many[1:]:                     "Too many metadata filters: at most 10 metadata[<key>]=<value> pairs",
		"metadata=yes&metadata[k]=v": "metadata must be 0 or 1",
	} {
		for _, path := range []string{"/users/alice/images?", "/images?publicKey=admin&"} {
			priv := userPriv
			if strings.HasPrefix(path, "/images") {
				priv = adminPriv
			}
			if r := e.get(e.tokenURL(path+q, priv)); r.StatusCode != 400 || r.errMessage(t) != msg {
				t.Errorf("%s%.40s: %d %s", path, q, r.StatusCode, r.body)
			}
		}
	}
}
