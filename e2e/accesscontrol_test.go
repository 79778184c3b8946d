package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

const immutable = "Access control adapter is immutable"

// rule is an access rule as the API shows it.
type rule struct {
	ID        json.RawMessage `json:"id"`
	Group     string          `json:"group,omitempty"`
	Resources []string        `json:"resources,omitempty"`
	Users     any             `json:"users"`
}

var integerID = regexp.MustCompile(`^[0-9]+$`)

// rules decodes an array of rules and checks that every id is an integer.
func rules(t *testing.T, what string, r *response) []rule {
	t.Helper()
	var out []rule
	r.JSON(t, &out)
	for _, ru := range out {
		if !integerID.Match(ru.ID) {
			t.Errorf("%s: rule id %s is not an integer (body %s)", what, ru.ID, r.Body)
		}
	}
	return out
}

func ruleIDs(rs []rule) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = string(r.ID)
	}
	return ids
}

// TestAccessControlLifecycle drives keys, rules and groups over HTTP with
// accessControl.database on, on
// SQLite and, when configured, PostgreSQL and MariaDB.
func TestAccessControlLifecycle(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		accessControlLifecycle(t, "")
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		accessControlLifecycle(t, postgresDSN(t))
	})
	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		accessControlLifecycle(t, mysqlDSN(t))
	})
}

func accessControlLifecycle(t *testing.T, database string) {
	admin := key{Public: "admin", Private: "admin-private"}
	cfg := `accessControl:
  database: true
  groups:
    uploaders: [images.post, image.get]
  keys:
    - publicKey: admin
      privateKey: admin-private
      rules:
        - users: "*"
          group: all
`
	if database != "" {
		cfg += "database: " + strconv.Quote(database) + "\n"
	}
	s := startServer(t, cfg)

	// An image of alice that the new key will try to read.
	img := testPNG(t, 32, 32, 3)
	id := md5Hex(img)
	imagePath := "/users/alice/images/" + id
	wantStatus(t, "admin uploads for alice", s.write(t, http.MethodPost, "/users/alice/images", img, admin), http.StatusCreated)

	// PUT /keys/<pk>: 201 when new, 200 when the private key changes.
	r := s.writeJSON(t, http.MethodPut, "/keys/reader", map[string]string{"privateKey": "first"}, admin)
	if checkStatus(t, "PUT new key", r, http.StatusCreated) {
		wantJSON(t, "PUT new key", r, map[string]any{"publicKey": "reader"})
	}
	r = s.writeJSON(t, http.MethodPut, "/keys/reader", map[string]string{"privateKey": "second"}, admin)
	if checkStatus(t, "PUT changed key", r, http.StatusOK) {
		wantJSON(t, "PUT changed key", r, map[string]any{"publicKey": "reader"})
	}
	reader := key{Public: "reader", Private: "second"}
	checkStatus(t, "HEAD existing key", s.read(t, http.MethodHead, "/keys/reader", admin), http.StatusOK)
	checkStatus(t, "HEAD missing key", s.read(t, http.MethodHead, "/keys/nobody", admin), http.StatusNotFound)

	// No rules yet: the key is denied.
	r = s.get(t, "/keys/reader/access", admin)
	if checkStatus(t, "GET rules of a new key", r, http.StatusOK) {
		if rs := rules(t, "GET rules of a new key", r); len(rs) != 0 {
			t.Errorf("GET rules of a new key: %s, want []", r.Body)
		}
	}
	// The refusals keep Imbo's phrase first and say which reason it is.
	notGranted := `Permission denied (public key): the access rules of key "reader" do not grant image.get on user "alice"; ` +
		"use a key that holds it, or add a rule that grants it (POST /keys/reader/access)"
	s.checkError(t, "read before any rule", s.get(t, imagePath, reader), http.StatusBadRequest, notGranted)

	// POST one rule object, then an array.
	r = s.writeJSON(t, http.MethodPost, "/keys/reader/access", map[string]any{"users": []string{"alice"}, "group": "read-only"}, admin)
	wantStatus(t, "POST one rule", r, http.StatusOK)
	created := rules(t, "POST one rule", r)
	if len(created) != 1 || created[0].Group != "read-only" || !reflect.DeepEqual(created[0].Users, []any{"alice"}) {
		t.Fatalf("POST one rule: %s, want one rule with group read-only and users [alice]", r.Body)
	}
	aliceRule := string(created[0].ID)
	r = s.writeJSON(t, http.MethodPost, "/keys/reader/access", []map[string]any{
		{"users": []string{"bob"}, "resources": []string{"image.get", "metadata.get"}},
		{"users": []string{"carol"}, "group": "read-only"},
	}, admin)
	var more []rule
	if checkStatus(t, "POST an array of rules", r, http.StatusOK) {
		more = rules(t, "POST an array of rules", r)
		if len(more) != 2 || !slices.Equal(more[0].Resources, []string{"image.get", "metadata.get"}) || more[1].Group != "read-only" {
			t.Errorf("POST an array of rules: %s", r.Body)
		}
	}
	all := append([]string{aliceRule}, ruleIDs(more)...)
	r = s.get(t, "/keys/reader/access", admin)
	if checkStatus(t, "GET rules", r, http.StatusOK) {
		got := ruleIDs(rules(t, "GET rules", r))
		slices.Sort(got)
		want := slices.Clone(all)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("GET rules: ids %v, want %v (body %s)", got, want, r.Body)
		}
	}
	r = s.get(t, "/keys/reader/access/"+aliceRule, admin)
	if checkStatus(t, "GET one rule", r, http.StatusOK) {
		var one rule
		r.JSON(t, &one)
		if string(one.ID) != aliceRule || one.Group != "read-only" || !reflect.DeepEqual(one.Users, []any{"alice"}) {
			t.Errorf("GET one rule: %s", r.Body)
		}
	}
	// A key may always read its own rules.
	checkStatus(t, "the key reads its own rules", s.get(t, "/keys/reader/access", reader), http.StatusOK)

	// While the rule exists the key reads alice's image; the old private key no longer works.
	r = s.get(t, imagePath, reader)
	if checkStatus(t, "read with the rule", r, http.StatusOK) && md5Hex(r.Body) != id {
		t.Errorf("read with the rule: other bytes")
	}
	s.checkError(t, "read with the replaced private key", s.get(t, imagePath, key{Public: "reader", Private: "first"}),
		http.StatusBadRequest, `Incorrect access token: accessToken is not the HMAC-SHA256 of this URL (without accessToken) `+
			`under the private key of "reader"; sign the URL exactly as it is sent, query included`)

	// Deleting the rule revokes access at once.
	checkStatus(t, "DELETE rule", s.write(t, http.MethodDelete, "/keys/reader/access/"+aliceRule, nil, admin), http.StatusOK)
	s.checkError(t, "read right after the rule was deleted", s.get(t, imagePath, reader), http.StatusBadRequest, notGranted)
	s.checkError(t, "GET deleted rule", s.get(t, "/keys/reader/access/"+aliceRule, admin), http.StatusNotFound, "Access rule not found")
	s.checkError(t, "DELETE deleted rule", s.write(t, http.MethodDelete, "/keys/reader/access/"+aliceRule, nil, admin),
		http.StatusNotFound, "Access rule not found")
	s.checkError(t, "GET rules of a missing key", s.get(t, "/keys/nobody/access", admin), http.StatusNotFound, "Public key not found")
	s.checkError(t, "GET rule of a missing key", s.get(t, "/keys/nobody/access/1", admin), http.StatusNotFound, "Public key not found")

	// Rule validation, in the order and wording Imbo clients expect
	// (api.parseRule).
	for _, c := range []struct {
		name, body, message string
	}{
		{"empty body", ``, "No access rule data provided"},
		{"not JSON", `nope`, "No access rule data provided"},
		{"unknown property", `{"users":["alice"],"group":"read-only","foo":1}`, "Found unknown properties in rule: [foo]"},
		{"both", `{"users":["alice"],"group":"read-only","resources":["image.get"]}`, "Both resources and group found in rule"},
		{"neither", `{"users":["alice"]}`, "Neither group nor resources found in rule"},
		{"unknown group", `{"users":["alice"],"group":"nope"}`, "Group 'nope' does not exist"},
		{"no users", `{"group":"read-only"}`, "Users not specified in rule"},
		{"users a string", `{"users":"alice","group":"read-only"}`, "Illegal value for users property. Allowed: '*' or array with users"},
		{"bad rule in an array", `[{"users":["alice"],"group":"read-only"},{"users":["alice"]}]`, "Neither group nor resources found in rule"},
	} {
		r := s.write(t, http.MethodPost, "/keys/reader/access", []byte(c.body), admin)
		s.checkError(t, "POST rule, "+c.name, r, http.StatusBadRequest, c.message)
	}
	r = s.get(t, "/keys/reader/access", admin)
	if checkStatus(t, "GET rules after invalid POSTs", r, http.StatusOK) {
		if got := rules(t, "GET rules after invalid POSTs", r); len(got) != len(more) {
			t.Errorf("invalid POSTs changed the rules: %s", r.Body)
		}
	}

	// Groups: PUT creates (201) and replaces (200); GET reads it back. Each
	// answer says where the group lives (a stored group may change).
	r = s.writeJSON(t, http.MethodPut, "/groups/viewers", []string{"image.get", "metadata.get"}, admin)
	if checkStatus(t, "PUT new group", r, http.StatusCreated) {
		wantJSON(t, "PUT new group", r, map[string]any{"name": "viewers", "resources": []any{"image.get", "metadata.get"}, "source": "database", "mutable": true})
	}
	r = s.writeJSON(t, http.MethodPut, "/groups/viewers", []string{"image.get"}, admin)
	if checkStatus(t, "PUT changed group", r, http.StatusOK) {
		wantJSON(t, "PUT changed group", r, map[string]any{"name": "viewers", "resources": []any{"image.get"}, "source": "database", "mutable": true})
	}
	r = s.get(t, "/groups/viewers", admin)
	if checkStatus(t, "GET group", r, http.StatusOK) {
		wantJSON(t, "GET group", r, map[string]any{"name": "viewers", "resources": []any{"image.get"}, "source": "database", "mutable": true})
	}
	s.checkError(t, "GET missing group", s.get(t, "/groups/nope", admin), http.StatusNotFound, "Group not found")

	// A rule using the group grants access; deleting the group deletes the rule.
	r = s.writeJSON(t, http.MethodPost, "/keys/reader/access", map[string]any{"users": []string{"alice"}, "group": "viewers"}, admin)
	wantStatus(t, "POST rule with the new group", r, http.StatusOK)
	groupRule := rules(t, "POST rule with the new group", r)
	if len(groupRule) != 1 {
		t.Fatalf("POST rule with the new group: %s", r.Body)
	}
	checkStatus(t, "read through the group", s.get(t, imagePath, reader), http.StatusOK)
	r = s.write(t, http.MethodDelete, "/groups/viewers", nil, admin)
	if checkStatus(t, "DELETE group", r, http.StatusOK) {
		wantJSON(t, "DELETE group", r, map[string]any{"name": "viewers", "resources": []any{"image.get"}, "source": "database", "mutable": true})
	}
	s.checkError(t, "GET rule of the deleted group", s.get(t, "/keys/reader/access/"+string(groupRule[0].ID), admin),
		http.StatusNotFound, "Access rule not found")
	s.checkError(t, "read after the group was deleted", s.get(t, imagePath, reader), http.StatusBadRequest, notGranted)
	s.checkError(t, "GET deleted group", s.get(t, "/groups/viewers", admin), http.StatusNotFound, "Group not found")
	s.checkError(t, "DELETE deleted group", s.write(t, http.MethodDelete, "/groups/viewers", nil, admin),
		http.StatusNotFound, "Group not found")

	// Keys, groups and rules of the configuration file are immutable.
	r = s.get(t, "/keys/admin/access", admin)
	wantStatus(t, "GET rules of the configured key", r, http.StatusOK)
	adminRules := rules(t, "GET rules of the configured key", r)
	if len(adminRules) != 1 {
		t.Fatalf("GET rules of the configured key: %s, want one rule", r.Body)
	}
	s.checkError(t, "PUT configured key", s.writeJSON(t, http.MethodPut, "/keys/admin", map[string]string{"privateKey": "x"}, admin),
		http.StatusMethodNotAllowed, immutable)
	s.checkError(t, "DELETE configured key", s.write(t, http.MethodDelete, "/keys/admin", nil, admin),
		http.StatusMethodNotAllowed, immutable)
	s.checkError(t, "POST rule to configured key",
		s.writeJSON(t, http.MethodPost, "/keys/admin/access", map[string]any{"users": "*", "group": "read-only"}, admin),
		http.StatusMethodNotAllowed, immutable)
	s.checkError(t, "DELETE rule of configured key",
		s.write(t, http.MethodDelete, "/keys/admin/access/"+string(adminRules[0].ID), nil, admin),
		http.StatusMethodNotAllowed, immutable)
	s.checkError(t, "PUT configured group", s.writeJSON(t, http.MethodPut, "/groups/uploaders", []string{"image.get"}, admin),
		http.StatusMethodNotAllowed, immutable)
	s.checkError(t, "DELETE configured group", s.write(t, http.MethodDelete, "/groups/uploaders", nil, admin),
		http.StatusMethodNotAllowed, immutable)
	// The built-in groups cannot be redefined either.
	s.checkError(t, "PUT built-in group", s.writeJSON(t, http.MethodPut, "/groups/read-only", []string{"image.get"}, admin),
		http.StatusMethodNotAllowed, immutable)
	s.checkError(t, "DELETE built-in group", s.write(t, http.MethodDelete, "/groups/all", nil, admin),
		http.StatusMethodNotAllowed, immutable)
	checkStatus(t, "the configured key still works", s.get(t, imagePath, admin), http.StatusOK)

	// DELETE /keys/<pk> removes the key and its rules.
	r = s.write(t, http.MethodDelete, "/keys/reader", nil, admin)
	if checkStatus(t, "DELETE key", r, http.StatusOK) {
		wantJSON(t, "DELETE key", r, map[string]any{"publicKey": "reader"})
	}
	s.checkError(t, "HEAD deleted key", s.read(t, http.MethodHead, "/keys/reader", admin), http.StatusNotFound, "Public key not found")
	s.checkError(t, "GET rules of deleted key", s.get(t, "/keys/reader/access", admin), http.StatusNotFound, "Public key not found")
	s.checkError(t, "DELETE deleted key", s.write(t, http.MethodDelete, "/keys/reader", nil, admin), http.StatusNotFound, "Public key not found")
	s.checkError(t, "read with the deleted key", s.get(t, imagePath, reader), http.StatusBadRequest,
		`Permission denied (public key): unknown public key "reader" (publicKey=); check the key's name, or create it `+
			"(vitrine keys add, or PUT /keys/<publicKey>)")
}

// TestAccessControlImmutable: with accessControl.database turned off, every
// change answers 405.
func TestAccessControlImmutable(t *testing.T) {
	admin := key{Public: "admin", Private: "admin-private"}
	s := startServer(t, adminOnlyConfig+"  database: false\n")
	r := s.get(t, "/keys/admin/access", admin)
	wantStatus(t, "GET rules of the configured key", r, http.StatusOK)
	adminRules := rules(t, "GET rules of the configured key", r)
	if len(adminRules) != 1 {
		t.Fatalf("GET rules of the configured key: %s, want one rule", r.Body)
	}
	for _, c := range []struct {
		name, method, path string
		body               any
	}{
		{"PUT new key", http.MethodPut, "/keys/newkey", map[string]string{"privateKey": "x"}},
		{"PUT configured key", http.MethodPut, "/keys/admin", map[string]string{"privateKey": "x"}},
		{"DELETE configured key", http.MethodDelete, "/keys/admin", nil},
		{"POST rule", http.MethodPost, "/keys/admin/access", map[string]any{"users": "*", "group": "read-only"}},
		{"DELETE rule", http.MethodDelete, "/keys/admin/access/" + string(adminRules[0].ID), nil},
		{"PUT group", http.MethodPut, "/groups/viewers", []string{"image.get"}},
	} {
		var r *response
		if c.body == nil {
			r = s.write(t, c.method, c.path, nil, admin)
		} else {
			r = s.writeJSON(t, c.method, c.path, c.body, admin)
		}
		s.checkError(t, c.name, r, http.StatusMethodNotAllowed, immutable)
	}
	checkStatus(t, "HEAD configured key", s.read(t, http.MethodHead, "/keys/admin", admin), http.StatusOK)
}
