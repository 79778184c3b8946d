package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/vitrine/vitrine/storage"
)

var errImmutable = errorf(http.StatusMethodNotAllowed, "Access control adapter is immutable")

// mutableKey refuses changes to keys when the database store is off or the
// key comes from the configuration file.
func (s *Server) mutableKey(pk string) error {
	if !s.acl.mutable {
		return errImmutable
	}
	if _, ok := s.acl.keys[pk]; ok {
		return errImmutable
	}
	return nil
}

// keyExists answers 404 Public key not found for unknown keys.
func (s *Server) keyExists(ctx context.Context, pk string) error {
	_, _, ok, err := s.acl.key(ctx, pk)
	if err != nil {
		return err
	}
	if !ok {
		return errorf(http.StatusNotFound, "Public key not found")
	}
	return nil
}

func (s *Server) headKey(c *call) error {
	if err := s.keyExists(c.ctx(), c.params["pk"]); err != nil {
		return err
	}
	return c.writeJSON(map[string]string{"publicKey": c.params["pk"]}, out{})
}

// putKey creates (201) or changes (200) a key pair.
func (s *Server) putKey(c *call) error {
	pk := c.params["pk"]
	if err := s.mutableKey(pk); err != nil {
		return err
	}
	var body struct {
		PrivateKey any `json:"privateKey"`
		Access     any `json:"access"`
	}
	if err := c.readJSON(256<<10, &body); err != nil {
		return err
	}
	priv, ok := body.PrivateKey.(string)
	if !ok || priv == "" {
		return errorf(http.StatusBadRequest, "No privateKey provided")
	}
	if body.Access != nil {
		return s.createKey(c, storage.Key{PublicKey: pk, PrivateKey: priv}, body.Access)
	}
	created, err := s.keys.PutKey(c.ctx(), storage.Key{PublicKey: pk, PrivateKey: priv})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.writeJSON(map[string]string{"publicKey": pk}, out{status: status})
}

// createKey is PUT /keys/<pk> with access: it creates the key together with
// its first rules, in one transaction, or nothing (409 when the key exists,
// whose private key is left alone; 400 for a rule the API refuses).
func (s *Server) createKey(c *call, k storage.Key, access any) error {
	rules, err := s.parseRules(c.ctx(), access)
	if err != nil {
		return err
	}
	if err := s.grantsWithin(c, rules); err != nil {
		return err
	}
	added, err := s.keys.CreateKey(c.ctx(), k, rules)
	if errors.Is(err, storage.ErrExist) {
		return errorf(http.StatusConflict, "Public key %s exists already; PUT without access changes its private key", k.PublicKey)
	}
	if err != nil {
		return err
	}
	views := make([]object, len(added))
	for i, r := range added {
		views[i] = ruleView(r, nil)
	}
	return c.writeJSON(map[string]any{"publicKey": k.PublicKey, "access": views}, out{status: http.StatusCreated})
}

func (s *Server) deleteKey(c *call) error {
	pk := c.params["pk"]
	if err := s.mutableKey(pk); err != nil {
		return err
	}
	if err := s.keys.DeleteKey(c.ctx(), pk); isNotExist(err) {
		return errorf(http.StatusNotFound, "Public key not found")
	} else if err != nil {
		return err
	}
	return c.writeJSON(map[string]string{"publicKey": pk}, out{})
}

// putGroup creates (201) or replaces (200) a database group from a JSON
// array of resource names (or `{"resources": [...]}`).
func (s *Server) putGroup(c *call) error {
	name := c.params["group"]
	if !s.acl.mutable {
		return errImmutable
	}
	if _, ok := s.acl.groups[name]; ok {
		return errImmutable
	}
	data, err := readBody(c, 64<<10)
	if err != nil {
		return err
	}
	var doc any
	if json.Unmarshal(data, &doc) != nil {
		doc = nil
	}
	if obj, ok := doc.(map[string]any); ok {
		doc = obj["resources"]
	}
	list, ok := doc.([]any)
	if !ok {
		return errorf(http.StatusBadRequest, "Invalid data. Array of resource strings is expected")
	}
	res := make([]string, 0, len(list))
	for _, v := range list {
		str, ok := v.(string)
		if !ok {
			return errorf(http.StatusBadRequest, "Invalid value in the resources array. Only strings are allowed")
		}
		res = append(res, str)
	}
	if err := unknownResource(res); err != nil {
		return err
	}
	created, err := s.groups.PutGroup(c.ctx(), storage.Group{Name: name, Resources: res})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	v := Group{Name: name, Resources: res}
	v.Source, v.Mutable = s.groupSource(name)
	return c.writeJSON(v, out{status: status})
}

func (s *Server) deleteGroup(c *call) error {
	name := c.params["group"]
	if _, ok := s.acl.groups[name]; ok || !s.acl.mutable {
		return errImmutable
	}
	g, err := s.groups.Group(c.ctx(), name)
	if isNotExist(err) {
		return errorf(http.StatusNotFound, "Group not found")
	}
	if err != nil {
		return err
	}
	if err := s.groups.DeleteGroup(c.ctx(), name); err != nil && !isNotExist(err) {
		return err
	}
	v := Group{Name: g.Name, Resources: nonNil(g.Resources)}
	v.Source, v.Mutable = s.groupSource(g.Name)
	return c.writeJSON(v, out{})
}

// ruleView renders a rule as the API shows it: users is `*` or a list.
func ruleView(r storage.Rule, expanded []string) object {
	o := object{keys: []string{"id"}, vals: map[string]any{"id": r.ID}}
	if r.Group != "" {
		o.keys = append(o.keys, "group")
		o.vals["group"] = r.Group
	}
	if r.Group == "" || expanded != nil {
		res := r.Resources
		if r.Group != "" {
			res = expanded
		}
		o.keys = append(o.keys, "resources")
		o.vals["resources"] = nonNil(res)
	}
	o.keys = append(o.keys, "users")
	if slices.Equal(r.Users, []string{"*"}) {
		o.vals["users"] = "*"
	} else {
		o.vals["users"] = nonNil(r.Users)
	}
	return o
}

func (s *Server) listRules(c *call) error {
	pk := c.params["pk"]
	_, rules, ok, err := s.acl.key(c.ctx(), pk)
	if err != nil {
		return err
	}
	if !ok {
		return errorf(http.StatusNotFound, "Public key not found")
	}
	views := make([]object, len(rules))
	for i, r := range rules {
		var expanded []string
		if r.Group != "" && c.query.Has("expandGroups") {
			if expanded, _, err = s.acl.group(c.ctx(), r.Group); err != nil {
				return err
			}
			expanded = nonNil(expanded)
		}
		views[i] = ruleView(r, expanded)
	}
	return c.writeJSON(views, out{cache: cacheJSON})
}

// findRule returns one rule of a key, with Imbo's 404s.
func (s *Server) findRule(c *call) (storage.Rule, error) {
	_, rules, ok, err := s.acl.key(c.ctx(), c.params["pk"])
	if err != nil {
		return storage.Rule{}, err
	}
	if !ok {
		return storage.Rule{}, errorf(http.StatusNotFound, "Public key not found")
	}
	id := ruleID(c.params["rule"])
	for _, r := range rules {
		if r.ID == id {
			return r, nil
		}
	}
	return storage.Rule{}, errorf(http.StatusNotFound, "Access rule not found")
}

func (s *Server) getRule(c *call) error {
	r, err := s.findRule(c)
	if err != nil {
		return err
	}
	return c.writeJSON(ruleView(r, nil), out{cache: cacheJSON})
}

func (s *Server) deleteRule(c *call) error {
	r, err := s.findRule(c)
	if err != nil {
		return err
	}
	if err := s.mutableKey(c.params["pk"]); err != nil {
		return err
	}
	if err := s.rules.DeleteRule(c.ctx(), r.PublicKey, r.ID); isNotExist(err) {
		return errorf(http.StatusNotFound, "Access rule not found")
	} else if err != nil {
		return err
	}
	return c.writeJSON(ruleView(r, nil), out{})
}

// postRules adds one rule object or an array of them; rule ids are integers.
func (s *Server) postRules(c *call) error {
	pk := c.params["pk"]
	if err := s.mutableKey(pk); err != nil {
		return err
	}
	if err := s.keyExists(c.ctx(), pk); err != nil {
		return err
	}
	data, err := readBody(c, 256<<10)
	if err != nil {
		return err
	}
	var doc any
	if json.NewDecoder(bytes.NewReader(data)).Decode(&doc) != nil {
		doc = nil
	}
	rules, err := s.parseRules(c.ctx(), doc)
	if err != nil {
		return err
	}
	if err := s.grantsWithin(c, rules); err != nil {
		return err
	}
	added, err := s.rules.AddRules(c.ctx(), pk, rules)
	if err != nil {
		return err
	}
	views := make([]object, len(added))
	for i, r := range added {
		views[i] = ruleView(r, nil)
	}
	return c.writeJSON(views, out{})
}

// grantsWithin refuses rules for users beyond those the acting key's own
// rules grant the call's resource on: a key limited to alice cannot give
// a key (itself included) a rule on bob or on "*".
func (s *Server) grantsWithin(c *call, rules []storage.Rule) error {
	for _, r := range rules {
		if err := s.ownedBy(c, "the rule would be for", r.Users); err != nil {
			return err
		}
	}
	return nil
}

// parseRules validates one rule object or an array of them, as POST
// /keys/<pk>/access and PUT /keys/<pk>'s access take them.
func (s *Server) parseRules(ctx context.Context, doc any) ([]storage.Rule, error) {
	noData := errorf(http.StatusBadRequest, "No access rule data provided")
	var items []any
	switch t := doc.(type) {
	case map[string]any:
		items = []any{t}
	case []any:
		items = t
	}
	if len(items) == 0 {
		return nil, noData
	}
	rules := make([]storage.Rule, 0, len(items))
	for _, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			return nil, noData
		}
		r, err := s.parseRule(ctx, obj)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// parseRule validates one rule, checking in this order (the first failure
// is the 400's message, as Imbo clients expect): no rule data, unknown
// properties, both or neither of resources and group, resources not a
// string array, group not a string, a missing group, no users, users
// neither "*" nor an array.
func (s *Server) parseRule(ctx context.Context, obj map[string]any) (storage.Rule, error) {
	bad := func(format string, args ...any) (storage.Rule, error) {
		return storage.Rule{}, errorf(http.StatusBadRequest, format, args...)
	}
	var unknown []string
	for k := range obj {
		if k != "resources" && k != "group" && k != "users" {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return bad("Found unknown properties in rule: [%s]", strings.Join(unknown, ", "))
	}
	resources, hasRes := obj["resources"]
	group, hasGroup := obj["group"]
	switch {
	case hasRes && hasGroup:
		return bad("Both resources and group found in rule")
	case !hasRes && !hasGroup:
		return bad("Neither group nor resources found in rule")
	}
	var r storage.Rule
	if hasRes {
		list, ok := resources.([]any)
		if !ok || len(list) == 0 {
			return bad("Illegal value in resources array. String array expected")
		}
		for _, v := range list {
			str, ok := v.(string)
			if !ok || str == "" {
				return bad("Illegal value in resources array. String array expected")
			}
			r.Resources = append(r.Resources, str)
		}
	} else if r.Group, _ = group.(string); r.Group == "" {
		return bad("Group must be specified as a string value")
	}
	exists := func(ctx context.Context, name string) (bool, error) {
		_, ok, err := s.acl.group(ctx, name)
		return ok, err
	}
	if err := validateGrant(ctx, r, exists); err != nil {
		return storage.Rule{}, err
	}
	users, ok := obj["users"]
	if !ok {
		return bad("Users not specified in rule")
	}
	// JSON writes every user as the string "*", or names in an array.
	illegal := "Illegal value for users property. Allowed: '*' or array with users"
	switch u := users.(type) {
	case string:
		if u != "*" {
			return bad("%s", illegal)
		}
		r.Users = []string{u}
	case []any:
		for _, v := range u {
			str, ok := v.(string)
			if !ok || str == "*" {
				return bad("%s", illegal)
			}
			r.Users = append(r.Users, str)
		}
		if len(r.Users) == 0 {
			return bad("%s", illegal)
		}
	default:
		return bad("%s", illegal)
	}
	if err := validateUsers(r.Users); err != nil {
		return storage.Rule{}, err
	}
	return r, nil
}
