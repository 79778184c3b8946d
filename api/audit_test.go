package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestAuditLog makes every kind of change through the API and reads it
// back from GET /audit with the key that made it and the client address.
func TestAuditLog(t *testing.T) {
	e := newEnv(t, mutableConfig())
	admin := func(method, path, body string) {
		t.Helper()
		if r := e.signed(method, path, adminKey, adminPriv, []byte(body)); r.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, r.StatusCode, r.body)
		}
	}
	id := e.upload(pngImage(t, 10, 10, 1)) // as alice
	img := "/users/alice/images/" + id
	admin(http.MethodPut, img+"/metadata", `{"a":1}`)
	admin(http.MethodPost, img+"/metadata", `{"b":"<&>"}`)
	admin(http.MethodDelete, img+"/metadata", ``)
	r := e.signed(http.MethodPost, img+"/shorturls", adminKey, adminPriv,
		[]byte(fmt.Sprintf(`{"user":"alice","imageIdentifier":%q,"extension":"png","query":""}`, id)))
	sid, _ := r.json(t)["id"].(string)
	admin(http.MethodDelete, img+"/shorturls/"+sid, ``)
	admin(http.MethodPut, "/keys/bob", `{"privateKey":"bob-1"}`)
	admin(http.MethodPut, "/keys/bob", `{"privateKey":"bob-2"}`)
	admin(http.MethodPut, "/groups/viewers", `["image.get"]`)
	admin(http.MethodPost, "/keys/bob/access", `{"group":"viewers","users":["alice"]}`)
	admin(http.MethodDelete, "/groups/viewers", ``)
	admin(http.MethodDelete, "/keys/bob", ``)
	admin(http.MethodDelete, img, ``)
	// A refused change is not recorded.
	if r := e.signed(http.MethodDelete, img, roKey, roPriv, nil); r.StatusCode < 400 {
		t.Fatalf("read-only delete: %d", r.StatusCode)
	}

	r = e.get(e.tokenURL("/audit?publicKey=admin&limit=100", adminPriv))
	if r.StatusCode != 200 {
		t.Fatalf("GET /audit: %d %s", r.StatusCode, r.body)
	}
	var got []string
	entries, _ := r.json(t)["entries"].([]any)
	for _, x := range slices.Backward(entries) {
		m := x.(map[string]any)
		got = append(got, fmt.Sprintf("%s %s %s %s", m["actor"], m["address"], m["action"], m["target"]))
	}
	a := "admin 127.0.0.1 "
	want := []string{
		"alice 127.0.0.1 image.create alice/" + id,
		a + "metadata.set alice/" + id, a + "metadata.merge alice/" + id, a + "metadata.delete alice/" + id,
		a + "shorturl.create alice/" + id, a + "shorturl.delete alice/" + id,
		a + "key.create bob", a + "key.update bob", a + "group.create viewers", a + "rule.create bob",
		a + "group.delete viewers", a + "key.delete bob", a + "image.delete alice/" + id,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audit log:\n%q\nwant\n%q", got, want)
	}
	t.Run("Filters", func(t *testing.T) {
		r := e.get(e.tokenURL("/audit?publicKey=admin&actor=alice", adminPriv))
		if n := r.json(t)["search"].(map[string]any)["hits"]; n != 1.0 {
			t.Fatalf("actor=alice: %v hits: %s", n, r.body)
		}
		r = e.get(e.tokenURL("/audit?publicKey=admin&action=metadata.&page=2&limit=2", adminPriv))
		s := r.json(t)["search"].(map[string]any)
		if s["hits"] != 3.0 || s["count"] != 1.0 {
			t.Fatalf("action=metadata. page 2: %s", r.body)
		}
		for _, q := range []string{"since=yesterday", "limit=1000", "page=0"} {
			if r := e.get(e.tokenURL("/audit?publicKey=admin&"+q, adminPriv)); r.StatusCode != 400 {
				t.Errorf("%s: %d %s", q, r.StatusCode, r.body)
			}
		}
		if r := e.get(e.tokenURL("/audit?publicKey=reader", roPriv)); r.StatusCode != 400 {
			t.Errorf("read-only key reads the audit log: %d", r.StatusCode)
		}
	})
}

// TestUsage counts requests per key and status and serves them per day.
func TestUsage(t *testing.T) {
	e := newEnv(t, mutableConfig())
	e.upload(pngImage(t, 10, 10, 2))
	for range 3 {
		e.get(e.tokenURL("/users/alice/images?publicKey=alice", userPriv))
	}
	e.get(e.url + "/users/alice/images?publicKey=alice&accessToken=wrong")
	if err := e.usage.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := e.get(e.tokenURL("/usage?publicKey=admin&metric=key.requests&days=7", adminPriv))
	body := r.json(t)
	days, _ := body["days"].([]any)
	if r.StatusCode != 200 || len(days) != 1 {
		t.Fatalf("GET /usage: %d %s", r.StatusCode, r.body)
	}
	if d := days[0].(map[string]any); d["label"] != "alice" || d["value"] != 4.0 {
		t.Fatalf("alice's requests: %v (want 4: an upload and 3 listings, not the refused one)", d)
	}
	if k, _ := body["keys"].(map[string]any)["alice"].(map[string]any); k["lastUsed"] == nil {
		t.Fatalf("alice's last use missing: %s", r.body)
	}
	r = e.get(e.tokenURL("/usage?publicKey=admin&metric=requests", adminPriv))
	if r.StatusCode != 200 || !contains(r.body, `"label":"400","value":1`) {
		t.Fatalf("requests by status: %s", r.body)
	}
	if r := e.get(e.tokenURL("/usage?publicKey=admin&metric=nope", adminPriv)); r.StatusCode != 400 {
		t.Fatalf("unknown metric: %d", r.StatusCode)
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }
