package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/api"
)

func mutableConfig() api.Config {
	cfg := testConfig()
	cfg.AccessControl.Database = true
	return cfg
}

func TestKeyGroupRuleLifecycle(t *testing.T) {
	e := newEnv(t, mutableConfig())
	id := e.upload(pngImage(t, 10, 10, 1))
	admin := func(method, path, body string) response {
		return e.signed(method, path, adminKey, adminPriv, []byte(body))
	}
	if r := admin(http.MethodPut, "/keys/bob", `{"privateKey":"bob-1"}`); r.StatusCode != 201 || r.json(t)["publicKey"] != "bob" {
		t.Fatalf("create key: %d %s", r.StatusCode, r.body)
	}
	if r := admin(http.MethodPut, "/keys/bob", `{"privateKey":"bob-secret"}`); r.StatusCode != 200 {
		t.Fatalf("change key: %d %s", r.StatusCode, r.body)
	}
	if r := admin(http.MethodPut, "/keys/bob", `{}`); r.StatusCode != 400 || r.errMessage(t) != "No privateKey provided" {
		t.Fatalf("key without privateKey: %d %s", r.StatusCode, r.body)
	}
	if r := e.request(http.MethodHead, e.tokenURL("/keys/bob?publicKey=admin", adminPriv), nil); r.StatusCode != 200 {
		t.Fatalf("HEAD key: %d", r.StatusCode)
	}
	if r := e.request(http.MethodHead, e.tokenURL("/keys/nobody?publicKey=admin", adminPriv), nil); r.StatusCode != 404 {
		t.Fatalf("HEAD missing key: %d", r.StatusCode)
	}
	read := func() int {
		return e.get(e.tokenURL("/users/alice/images/"+id+"?publicKey=bob", "bob-secret")).StatusCode
	}
	if read() != 400 {
		t.Fatal("bob reads without a rule")
	}
	if r := admin(http.MethodPut, "/groups/viewers", `["image.get","image.head"]`); r.StatusCode != 201 {
		t.Fatalf("create group: %d %s", r.StatusCode, r.body)
	}
	r := admin(http.MethodPost, "/keys/bob/access", `{"group":"viewers","users":["alice"]}`)
	if r.StatusCode != 200 || !strings.HasPrefix(string(r.body), `[{"id":`) {
		t.Fatalf("add rule: %d %s", r.StatusCode, r.body)
	}
	if read() != 200 {
		t.Fatal("bob cannot read with a rule")
	}
	// A key may always read its own rules.
	r = e.get(e.tokenURL("/keys/bob/access?publicKey=bob&expandGroups", "bob-secret"))
	if r.StatusCode != 200 || !strings.Contains(string(r.body), `"resources":["image.get","image.head"]`) {
		t.Fatalf("own rules: %d %s", r.StatusCode, r.body)
	}
	// Deleting the group deletes its rules: access ends at once.
	if r := admin(http.MethodDelete, "/groups/viewers", ""); r.StatusCode != 200 {
		t.Fatalf("delete group: %d %s", r.StatusCode, r.body)
	}
	if read() != 400 {
		t.Fatal("bob still reads after the group went")
	}
	r = admin(http.MethodPost, "/keys/bob/access", `[{"resources":["image.get"],"users":"*"}]`)
	ruleID := strings.TrimSuffix(strings.TrimPrefix(string(r.body), `[{"id":`), `,"resources":["image.get"],"users":"*"}]`)
	if r.StatusCode != 200 || read() != 200 {
		t.Fatalf("add resource rule: %d %s", r.StatusCode, r.body)
	}
	if r := e.get(e.tokenURL("/keys/bob/access/"+ruleID+"?publicKey=admin", adminPriv)); r.StatusCode != 200 || r.json(t)["users"] != "*" {
		t.Fatalf("get rule %s: %d %s", ruleID, r.StatusCode, r.body)
	}
	if r := admin(http.MethodDelete, "/keys/bob/access/"+ruleID, ""); r.StatusCode != 200 {
		t.Fatalf("delete rule: %d %s", r.StatusCode, r.body)
	}
	if read() != 400 {
		t.Fatal("bob reads after his rule was deleted")
	}
	for _, c := range []struct{ path, method, body, msg string }{
		{"/keys/bob/access/999", http.MethodDelete, "", "Access rule not found"},
		{"/keys/nobody/access", http.MethodPost, `{"resources":["a"],"users":"*"}`, "Public key not found"},
		{"/keys/nobody", http.MethodDelete, "", "Public key not found"},
		{"/groups/nope", http.MethodDelete, "", "Group not found"},
	} {
		if r := admin(c.method, c.path, c.body); r.StatusCode != 404 || r.errMessage(t) != c.msg {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.StatusCode, r.body)
		}
	}
	if r := admin(http.MethodDelete, "/keys/bob", ""); r.StatusCode != 200 {
		t.Fatalf("delete key: %d %s", r.StatusCode, r.body)
	}
	if read() != 400 {
		t.Fatal("a deleted key still reads")
	}
}

func TestRuleValidation(t *testing.T) {
	e := newEnv(t, mutableConfig())
	if r := e.signed(http.MethodPut, "/keys/carol", adminKey, adminPriv, []byte(`{"privateKey":"c"}`)); r.StatusCode != 201 {
		t.Fatalf("create key: %d", r.StatusCode)
	}
	for _, c := range []struct{ body, msg string }{
		{``, "No access rule data provided"},
		{`"x"`, "No access rule data provided"},
		{`{"foo":1,"bar":2,"users":"*"}`, "Found unknown properties in rule: [bar, foo]"},
		{`{"group":"all","resources":["a"],"users":"*"}`, "Both resources and group found in rule"},
		{`{"users":"*"}`, "Neither group nor resources found in rule"},
		{`{"resources":"image.get","users":"*"}`, "Illegal value in resources array. String array expected"},
		{`{"group":1,"users":"*"}`, "Group must be specified as a string value"},
		{`{"group":"nope","users":"*"}`, "Group 'nope' does not exist"},
		{`{"group":"all"}`, "Users not specified in rule"},
		{`{"group":"all","users":"alice"}`, "Illegal value for users property. Allowed: '*' or array with users"},
		{`{"resources":["image.get","image.gett"],"users":"*"}`, "Resource 'image.gett' does not exist"},
	} {
		r := e.signed(http.MethodPost, "/keys/carol/access", adminKey, adminPriv, []byte(c.body))
		if r.StatusCode != 400 || r.errMessage(t) != c.msg {
			t.Errorf("%s: %d %s", c.body, r.StatusCode, r.body)
		}
	}
}

// TestUnknownResources: a rule or group naming a resource that does not
// exist is refused with 400 naming it, and nothing is stored.
func TestUnknownResources(t *testing.T) {
	e := newEnv(t, mutableConfig())
	if r := e.signed(http.MethodPut, "/keys/carol", adminKey, adminPriv, []byte(`{"privateKey":"c"}`)); r.StatusCode != 201 {
		t.Fatalf("create key: %d", r.StatusCode)
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/keys/carol/access", `[{"resources":["images.get"],"users":"*"},{"resources":["image.gett"],"users":"*"}]`},
		{http.MethodPut, "/groups/viewers", `["image.get","image.gett"]`},
	} {
		r := e.signed(c.method, c.path, adminKey, adminPriv, []byte(c.body))
		if r.StatusCode != 400 || r.errMessage(t) != "Resource 'image.gett' does not exist" {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.StatusCode, r.body)
		}
	}
	if r := e.get(e.tokenURL("/keys/carol/access?publicKey=admin", adminPriv)); string(r.body) != "[]" {
		t.Errorf("rules stored anyway: %s", r.body)
	}
	if r := e.get(e.tokenURL("/groups/viewers?publicKey=admin", adminPriv)); r.StatusCode != 404 {
		t.Errorf("group stored anyway: %d %s", r.StatusCode, r.body)
	}
	// Every resource there is may be granted.
	all, _ := json.Marshal(map[string]any{"resources": api.Resources(), "users": "*"})
	if r := e.signed(http.MethodPost, "/keys/carol/access", adminKey, adminPriv, all); r.StatusCode != 200 {
		t.Errorf("a rule with every resource: %d %s", r.StatusCode, r.body)
	}
}

func TestImmutableAccessControl(t *testing.T) {
	for _, database := range []bool{false, true} {
		cfg := testConfig()
		cfg.AccessControl.Database = database
		e := newEnv(t, cfg)
		for _, c := range []struct{ method, path, body string }{
			{http.MethodPut, "/keys/alice", `{"privateKey":"x"}`},
			{http.MethodDelete, "/keys/alice", ""},
			{http.MethodPost, "/keys/alice/access", `{"group":"all","users":"*"}`},
			{http.MethodDelete, "/keys/alice/access/1", ""},
			{http.MethodPut, "/groups/read-only", `["image.get"]`},
		} {
			r := e.signed(c.method, c.path, adminKey, adminPriv, []byte(c.body))
			if r.StatusCode != 405 || r.errMessage(t) != "Access control adapter is immutable" {
				t.Errorf("database=%v %s %s: %d %s", database, c.method, c.path, r.StatusCode, r.body)
			}
		}
		if !database {
			r := e.signed(http.MethodPut, "/keys/newkey", adminKey, adminPriv, []byte(`{"privateKey":"x"}`))
			if r.StatusCode != 405 {
				t.Errorf("new key with database off: %d", r.StatusCode)
			}
		}
	}
}

// TestGroupSources: GET /groups and /groups/<name> say where each group is
// defined and whether it may change; the list says whether any may.
func TestGroupSources(t *testing.T) {
	for _, db := range []bool{false, true} {
		cfg := testConfig()
		cfg.AccessControl.Database = db
		cfg.AccessControl.Groups = map[string][]string{"viewers": {"image.get"}}
		e := newEnv(t, cfg)
		if db {
			r := e.signed(http.MethodPut, "/groups/stored", adminKey, adminPriv, []byte(`["images.get"]`))
			if r.StatusCode != 201 {
				t.Fatalf("put group: %d %s", r.StatusCode, r.body)
			}
			// The answer of PUT says where the group lives, as GET does.
			if g := r.json(t); g["source"] != "database" || g["mutable"] != true {
				t.Fatalf("put group answer: %s", r.body)
			}
		}
		r := e.get(e.tokenURL("/groups?publicKey=admin", adminPriv))
		m := r.json(t)
		if m["mutable"] != db {
			t.Fatalf("database %v: mutable %v", db, m["mutable"])
		}
		got := map[string]string{}
		for _, g := range m["groups"].([]any) {
			g := g.(map[string]any)
			got[g["name"].(string)] = fmt.Sprint(g["source"], " ", g["mutable"])
		}
		want := map[string]string{"all": "builtin false", "read-only": "builtin false", "read-write": "builtin false", "viewers": "config false"}
		if db {
			want["stored"] = "database true"
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("database %v: groups %v, want %v", db, got, want)
		}
		r = e.get(e.tokenURL("/groups/viewers?publicKey=admin", adminPriv))
		if g := r.json(t); g["source"] != "config" || g["mutable"] != false {
			t.Fatalf("one group: %s", r.body)
		}
	}
}

// TestCreateKeyWithAccess: PUT /keys/<pk> with access stores the key and
// its rules together, or nothing: a refused rule leaves no key, and an
// existing key answers 409 with its private key unchanged.
func TestCreateKeyWithAccess(t *testing.T) {
	e := newEnv(t, mutableConfig())
	exists := func(pk string) int {
		return e.get(e.tokenURL("/keys/"+pk+"/access?publicKey=admin", adminPriv)).StatusCode
	}
	r := e.signed(http.MethodPut, "/keys/dave", adminKey, adminPriv,
		[]byte(`{"privateKey":"d","access":{"resources":["image.gett"],"users":"*"}}`))
	if r.StatusCode != 400 || r.errMessage(t) != "Resource 'image.gett' does not exist" {
		t.Fatalf("bad rule: %d %s", r.StatusCode, r.body)
	}
	if st := exists("dave"); st != 404 {
		t.Fatalf("a key whose rule was refused exists: HEAD %d", st)
	}
	r = e.signed(http.MethodPut, "/keys/dave", adminKey, adminPriv,
		[]byte(`{"privateKey":"d","access":[{"group":"read-only","users":["alice"]},{"resources":["images.post"],"users":["alice"]}]}`))
	if r.StatusCode != 201 {
		t.Fatalf("create with access: %d %s", r.StatusCode, r.body)
	}
	m := r.json(t)
	if m["publicKey"] != "dave" || len(m["access"].([]any)) != 2 {
		t.Fatalf("create with access answered %s", r.body)
	}
	r = e.signed(http.MethodPut, "/keys/dave", adminKey, adminPriv,
		[]byte(`{"privateKey":"other","access":{"group":"read-only","users":["bob"]}}`))
	if r.StatusCode != 409 {
		t.Fatalf("existing key: %d %s", r.StatusCode, r.body)
	}
	// The private key is still d: a read signed with it works.
	r = e.get(e.tokenURL("/keys/dave/access?publicKey=dave", "d"))
	var rules []any
	if r.StatusCode != 200 || json.Unmarshal(r.body, &rules) != nil || len(rules) != 2 {
		t.Fatalf("rules after the 409: %d %s", r.StatusCode, r.body)
	}
}
