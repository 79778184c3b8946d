package api_test

import (
	"net/http"
	"testing"
)

func TestListKeys(t *testing.T) {
	e := newEnv(t, mutableConfig())
	if r := e.signed(http.MethodPut, "/keys/carol", adminKey, adminPriv, []byte(`{"privateKey":"c"}`)); r.StatusCode != 201 {
		t.Fatalf("create key: %d", r.StatusCode)
	}
	r := e.get(e.tokenURL("/keys?publicKey=admin", adminPriv))
	if r.StatusCode != 200 {
		t.Fatalf("list keys: %d %s", r.StatusCode, r.body)
	}
	keys := r.json(t)["keys"].([]any)
	sources := map[string]string{}
	for _, k := range keys {
		m := k.(map[string]any)
		sources[m["publicKey"].(string)] = m["source"].(string)
		if _, leaked := m["privateKey"]; leaked {
			t.Fatalf("a private key is listed: %s", r.body)
		}
	}
	if sources["carol"] != "database" || sources[adminKey] != "config" {
		t.Fatalf("keys: %s", r.body)
	}
	if r := e.get(e.tokenURL("/keys?publicKey=reader", roPriv)); r.StatusCode != 400 {
		t.Fatalf("a read-only key lists keys: %d %s", r.StatusCode, r.body)
	}
	if m, ok := r.json(t)["mutable"].(bool); !ok || !m {
		t.Fatalf("keys of a database store: mutable %v, want true: %s", r.json(t)["mutable"], r.body)
	}
}

// TestListKeysReadOnlyStore: without accessControl.database the listing
// says keys cannot be changed through the API, so a client can say so
// before it tries.
func TestListKeysReadOnlyStore(t *testing.T) {
	e := newEnv(t, testConfig())
	r := e.get(e.tokenURL("/keys?publicKey=admin", adminPriv))
	if r.StatusCode != 200 {
		t.Fatalf("list keys: %d %s", r.StatusCode, r.body)
	}
	if m, ok := r.json(t)["mutable"].(bool); !ok || m {
		t.Fatalf("keys of a configuration-only store: mutable %v, want false: %s", r.json(t)["mutable"], r.body)
	}
}
