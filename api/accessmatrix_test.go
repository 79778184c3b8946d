package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/outbound"
	"github.com/vitrine/vitrine/storage/storagetest"
)

// matrixRow is how the access matrix calls one route and method: a
// query and a body beside the path parameters every row shares.
type matrixRow struct {
	query string
	body  string
	// public: served without a key although its route is not (tus's
	// discovery).
	public bool
	// tus: a resumable upload's request (Tus-Resumable: 1.0.0).
	tus bool
}

// matrixRows has a row for every route and method the server serves,
// HEAD included wherever GET is. A route missing here fails the matrix:
// a new resource gets its row, and with it the check of every key shape.
// (A HEAD is called as its GET's row says.)
var matrixRows = map[string]matrixRow{
	"GET /healthz": {}, "GET /readyz": {}, "GET /openapi.json": {},
	"GET /": {}, "GET /status": {}, "GET /stats": {}, "GET /transformations": {}, "GET /s/{id}": {},
	"GET /users/{user}": {}, "DELETE /users/{user}": {},
	"GET /users/{user}/erasure": {}, "GET /users/{user}/erasure/receipt": {},
	"GET /users/{user}/quota": {}, "PUT /users/{user}/quota": {body: `{"maxImages": 1000}`},
	"GET /users/{user}/images": {}, "POST /users/{user}/images": {body: "png"},
	// The guard refuses loopback after the access check: nothing is fetched.
	"POST /users/{user}/images/url":    {body: `{"url": "http://127.0.0.1:9/img.png"}`},
	"GET /users/{user}/images/{image}": {}, "DELETE /users/{user}/images/{image}": {},
	"GET /users/{user}/images/{image}/metadata": {}, "PUT /users/{user}/images/{image}/metadata": {body: `{"a":1}`},
	"POST /users/{user}/images/{image}/metadata": {body: `{"b":2}`}, "DELETE /users/{user}/images/{image}/metadata": {},
	"GET /users/{user}/images/{image}/meta": {}, "PUT /users/{user}/images/{image}/meta": {body: `{"a":1}`},
	"POST /users/{user}/images/{image}/meta": {body: `{"b":2}`}, "DELETE /users/{user}/images/{image}/meta": {},
	"GET /users/{user}/images/{image}/shorturls": {}, "POST /users/{user}/images/{image}/shorturls": {body: `{}`},
	"DELETE /users/{user}/images/{image}/shorturls":      {},
	"GET /users/{user}/images/{image}/shorturls/{id}":    {},
	"DELETE /users/{user}/images/{image}/shorturls/{id}": {},
	"GET /users/{user}/images/{image}/variants":          {},
	"GET /images":                                   {query: "users[]=alice"},
	"GET /groups":                                   {},
	"GET /groups/{group}":                           {},
	"PUT /groups/{group}":                           {body: `{"resources": ["image.get"]}`},
	"DELETE /groups/{group}":                        {},
	"GET /filters":                                  {},
	"POST /filters/reload":                          {},
	"PUT /filters/{filter}":                         {body: "not a bundle"},
	"PATCH /filters/{filter}":                       {body: `{}`},
	"DELETE /filters/{filter}":                      {},
	"POST /filters/{filter}/rollback":               {body: `{}`},
	"GET /keys":                                     {},
	"HEAD /keys/{pk}":                               {},
	"PUT /keys/{pk}":                                {body: `{"privateKey": "matrix-private-key"}`},
	"DELETE /keys/{pk}":                             {},
	"GET /keys/{pk}/access":                         {},
	"POST /keys/{pk}/access":                        {body: `[{"resources": ["image.get"], "users": ["alice"]}]`},
	"GET /keys/{pk}/access/{rule}":                  {},
	"DELETE /keys/{pk}/access/{rule}":               {},
	"GET /audit":                                    {query: "user=alice"},
	"GET /usage":                                    {query: "metric=requests"},
	"GET /webhooks":                                 {},
	"POST /webhooks":                                {body: `{"url": "http://127.0.0.1:9/new", "users": ["alice"]}`},
	"GET /webhooks/{webhook}":                       {},
	"PUT /webhooks/{webhook}":                       {body: `{"description": "changed"}`},
	"DELETE /webhooks/{webhook}":                    {},
	"POST /webhooks/{webhook}/ping":                 {},
	"GET /webhooks/{webhook}/deliveries":            {},
	"GET /webhooks/{webhook}/deliveries/{delivery}": {},
	"POST /webhooks/{webhook}/deliveries/{delivery}/redeliver": {},
	"POST /users/{user}/uploadtokens":                          {body: `{}`},
	"DELETE /users/{user}/uploadtokens/{token}":                {},
	"POST /users/{user}/uploads":                               {tus: true},
	"OPTIONS /users/{user}/uploads":                            {public: true},
	"OPTIONS /users/{user}/uploads/{upload}":                   {public: true},
	"HEAD /users/{user}/uploads/{upload}":                      {tus: true},
	"PATCH /users/{user}/uploads/{upload}":                     {tus: true},
	"DELETE /users/{user}/uploads/{upload}":                    {tus: true},
	"GET /blocklist":                                           {},
	"POST /blocklist":                                          {body: `{"checksum": "0123456789abcdef0123456789abcdef"}`},
	"GET /blocklist/{entry}":                                   {},
	"DELETE /blocklist/{entry}":                                {},
	"POST /blocklist/{entry}/remove":                           {},
}

// matrixKey is one shape of key the matrix calls every route with.
type matrixKey struct {
	shape, pub, priv string
	rules            []api.ConfigRule
}

// TestAccessMatrix calls every route and method the router serves (its
// own list, api.Server.Routes) with keys of every shape: none; another
// user's read-write key; the user's read-only and read-write keys; a key
// holding exactly the route's resource on another user; and one holding
// it on "*". The user is alice, and the records the routes name are
// alice's (an image, a webhook subscription). Each answer must be the one
// the rules imply (scope.go): a refusal by the rules exactly when the key
// holds the resource on no user the route reaches, and never a record of
// alice's to a key without a rule for her. Run on SQLite, and on
// PostgreSQL with VITRINE_TEST_POSTGRES.
func TestAccessMatrix(t *testing.T) {
	backends := map[string]string{"sqlite": ""}
	if os.Getenv("VITRINE_TEST_POSTGRES") != "" {
		backends["postgres"] = storagetest.PostgresDSN(t)
	}
	for name, dsn := range backends {
		t.Run(name, func(t *testing.T) { accessMatrix(t, dsn) })
	}
}

func accessMatrix(t *testing.T, dsn string) {
	cfg := testConfig()
	keys := []matrixKey{{shape: "no key"},
		{shape: "another user's read-write key", pub: "bob", priv: "bob-secret",
			rules: []api.ConfigRule{{Users: api.Users{"bob"}, Group: "read-write"}}},
		{shape: "the user's read-only key", pub: roKey, priv: roPriv},
		{shape: "the user's read-write key", pub: userKey, priv: userPriv},
	}
	for _, res := range api.Resources() {
		id := strings.ReplaceAll(res, ".", "-")
		keys = append(keys,
			matrixKey{shape: "only " + res + " on bob", pub: "ob-" + id, priv: "ob-secret-" + id,
				rules: []api.ConfigRule{{Users: api.Users{"bob"}, Resources: []string{res}}}},
			matrixKey{shape: "only " + res + " on *", pub: "oa-" + id, priv: "oa-secret-" + id,
				rules: []api.ConfigRule{{Users: api.Users{"*"}, Resources: []string{res}}}})
	}
	for _, k := range keys[1:] {
		if k.rules != nil {
			cfg.AccessControl.Keys = append(cfg.AccessControl.Keys, api.ConfigKey{PublicKey: k.pub, PrivateKey: k.priv, Rules: k.rules})
		}
	}
	guard, err := outbound.New(outbound.Config{Allow: []string{"127.0.0.1"}, Dialer: &loopbackOnly{t: t}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, dsn, cfg, func(d *api.Deps) { d.Webhooks = guard })
	groups := map[string][]string{}
	for _, g := range []string{"read-only", "read-write"} {
		var body struct{ Resources []string }
		if err := json.Unmarshal(e.get(e.tokenURL("/groups/"+g+"?publicKey="+adminKey, adminPriv)).body, &body); err != nil {
			t.Fatal(err)
		}
		groups[g] = body.Resources
	}
	for i := range keys {
		for j, r := range keys[i].rules {
			if r.Group != "" {
				keys[i].rules[j].Resources = groups[r.Group]
			}
		}
	}
	keys[2].rules = []api.ConfigRule{{Users: api.Users{"alice"}, Resources: groups["read-only"]}}
	keys[3].rules = []api.ConfigRule{{Users: api.Users{"alice"}, Resources: groups["read-write"]}}

	image := e.upload(pngImage(t, 8, 8, 1))
	var short struct{ ID string }
	if r := e.admin(http.MethodPost, "/users/alice/images/"+image+"/shorturls",
		`{"user": "alice", "imageIdentifier": "`+image+`"}`); json.Unmarshal(r.body, &short) != nil || short.ID == "" {
		t.Fatalf("short URL: %d %s", r.StatusCode, r.body)
	}
	// newHook makes a subscription of alice's for a case: a case may delete
	// or change the one before.
	newHook := func() string {
		var h struct{ ID string }
		r := e.admin(http.MethodPost, "/webhooks", `{"url": "http://127.0.0.1:9/alice", "users": ["alice"]}`)
		if err := json.Unmarshal(r.body, &h); err != nil || h.ID == "" {
			t.Fatalf("webhook for alice: %d %s", r.StatusCode, r.body)
		}
		return h.ID
	}

	var cases []string // "METHOD /pattern", every one the router serves
	scopes := map[string]api.Route{}
	for _, rt := range e.srv.Routes() {
		methods := slices.Clone(rt.Methods)
		if slices.Contains(methods, http.MethodGet) && rt.Name != "" {
			methods = append(methods, http.MethodHead)
		}
		for _, m := range methods {
			c := m + " " + rt.Path
			if _, ok := matrixRows[rowOf(c)]; !ok {
				t.Errorf("%s (resource %s.%s, scope %s) has no row in the access matrix (matrixRows)", c, rt.Name,
					strings.ToLower(m), rt.Scope)
				continue
			}
			if _, dup := scopes[c]; !dup {
				cases = append(cases, c)
			}
			scopes[c] = rt
		}
	}
	for c := range matrixRows {
		if _, ok := scopes[c]; !ok && !strings.HasPrefix(c, "HEAD ") {
			t.Errorf("matrix row %s: the router serves no such route", c)
		}
	}
	// The erasure of alice goes last: after it her writes answer 409.
	sort.SliceStable(cases, func(i, j int) bool { return cases[j] == "DELETE /users/{user}" })

	checked := 0
	for _, c := range cases {
		rt, row := scopes[c], matrixRows[rowOf(c)]
		method, pattern, _ := strings.Cut(c, " ")
		resource := rt.Name + "." + strings.ToLower(method)
		for _, k := range keys {
			if strings.HasPrefix(k.pub, "ob-") || strings.HasPrefix(k.pub, "oa-") {
				if k.pub[3:] != strings.ReplaceAll(resource, ".", "-") {
					continue // the keys of exactly one resource call only its routes
				}
			}
			hook := ""
			path := pattern
			if strings.Contains(path, "{webhook}") {
				hook = newHook()
			}
			for p, v := range map[string]string{"{user}": "alice", "{image}": image, "{id}": short.ID, "{webhook}": hook,
				"{delivery}": "1", "{pk}": "matrix-target", "{group}": "matrix-group", "{rule}": "1", "{filter}": "matrixf",
				"{entry}": "1", "{token}": "matrixtoken", "{upload}": "0123456789abcdef0123456789abcdef"} {
				path = strings.ReplaceAll(path, p, v)
			}
			if row.query != "" {
				path += "?" + row.query
			}
			r := matrixCall(t, e, method, path, row, k)
			refused := isRefusal(r, method)
			want := row.public || implied(k, resource, rt.Scope)
			where := fmt.Sprintf("%s as %s (%s, scope %s)", c, k.shape, resource, rt.Scope)
			switch {
			case r.StatusCode >= 500 && r.StatusCode != http.StatusNotImplemented:
				t.Errorf("%s: %d %s", where, r.StatusCode, r.body)
			case want && refused:
				t.Errorf("%s: refused (%d %s), but the rules grant it", where, r.StatusCode, r.body)
			case !want && !refused && mustRefuse(method, pattern, rt.Scope):
				t.Errorf("%s: answered %d %.200s, but the rules grant it on no user the route reaches", where, r.StatusCode, r.body)
			case !want && !refused && (strings.Contains(string(r.body), image) || hook != "" && strings.Contains(string(r.body), hook)):
				t.Errorf("%s: answered %d with alice's records: %.300s", where, r.StatusCode, r.body)
			}
			checked++
		}
	}
	t.Logf("%d routes and methods, %d calls: %s", len(cases), checked, strings.Join(cases, ", "))
}

// implied is the answer the rules imply: whether k holds resource on a
// user that a route of scope reaches (alice; "*" for a service-wide
// route; any user for the interface's routes without one).
func implied(k matrixKey, resource, scope string) bool {
	switch {
	case scope == "public":
		return true
	case strings.HasPrefix(resource, "globalimages."):
		// /images asks for alice's images: globalimages.<method> on any
		// users, and images.get on alice (api/README.md, The API).
		return holds(k, resource, "") && holds(k, "images.get", "alice")
	case scope == "any":
		return holds(k, resource, "")
	case scope == "service":
		return holds(k, resource, "*")
	}
	return holds(k, resource, "alice") // path, owned
}

// holds reports whether a rule of k grants resource on user ("": on any
// users; "*": on every user).
func holds(k matrixKey, resource, user string) bool {
	for _, r := range k.rules {
		if slices.Contains(r.Resources, resource) &&
			(user == "" || slices.Contains(r.Users, "*") || slices.Contains(r.Users, user)) {
			return true
		}
	}
	return false
}

// mustRefuse: a call the rules do not grant is refused, but for reads of
// a listing of owned records, which may answer with the records the key
// does reach instead (none of alice's).
func mustRefuse(method, pattern, scope string) bool {
	listing := pattern == "/webhooks" || pattern == "/images" || pattern == "/audit"
	return scope != "owned" || !listing || (method != http.MethodGet && method != http.MethodHead)
}

// matrixCall makes one call as k: reads with an access token, writes and
// every resumable upload request signed, no credentials for the keyless
// shape.
func matrixCall(t *testing.T, e *env, method, path string, row matrixRow, k matrixKey) response {
	t.Helper()
	data := []byte(row.body)
	headers := []string{"Content-Type", "application/json"}
	switch {
	case row.body == "png":
		data, headers = pngImage(t, 8, 8, 2), []string{"Content-Type", "image/png"}
	case row.tus:
		headers = []string{"Tus-Resumable", "1.0.0", "Upload-Length", "10", "Upload-Offset", "0",
			"Content-Type", "application/offset+octet-stream"}
	}
	switch {
	case k.pub == "":
		return e.request(method, e.url+path, data, headers...)
	case !row.tus && (method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions):
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		return e.request(method, e.tokenURL(path+sep+"publicKey="+k.pub, k.priv), nil, headers...)
	}
	return e.signed(method, path, k.pub, k.priv, data, headers...)
}

// rowOf is the row of a case: a HEAD's is its GET's.
func rowOf(c string) string {
	if rest, ok := strings.CutPrefix(c, "HEAD "); ok {
		if _, own := matrixRows[c]; !own {
			return "GET " + rest
		}
	}
	return c
}

// refusals are how the rules and the authentication refuse a call: a key
// whose rules do not grant it, no key, and (a keyless call on a user's
// route takes the user as its key) no token or signature.
var refusals = []string{"Permission denied", "Missing public key", "Missing access token", "Missing authentication",
	"Public key does not have access to the users"}

// isRefusal reports whether r refuses the call for its key. A HEAD has
// no body: its 400 is the refusal (no route of the matrix answers 400 to
// a HEAD otherwise).
func isRefusal(r response, method string) bool {
	if r.StatusCode != http.StatusBadRequest {
		return false
	}
	if method == http.MethodHead {
		return true
	}
	var body struct{ Error struct{ Message string } }
	_ = json.Unmarshal(r.body, &body)
	for _, p := range refusals {
		if strings.HasPrefix(body.Error.Message, p) {
			return true
		}
	}
	return false
}
