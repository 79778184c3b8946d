package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/vitrine/vitrine/storage"
)

// Resource sets of the built-in groups (api/README.md, The API), Imbo's.
var (
	readOnlyResources = []string{
		"user.get", "user.head", "user.options",
		"image.get", "image.head", "image.options",
		"images.get", "images.head", "images.options",
		"metadata.get", "metadata.head", "metadata.options",
		"shorturl.get", "shorturl.head", "shorturl.options",
		"globalimages.get", "globalimages.head", "globalimages.options",
		"shorturls.get", "shorturls.head", "shorturls.options",
		"variants.get", "variants.head", "variants.options",
		"quota.get", "quota.head", "quota.options",
	}
	readWriteResources = append(slices.Clone(readOnlyResources),
		"image.delete", "images.post",
		"metadata.post", "metadata.delete", "metadata.put",
		"shorturl.delete", "shorturls.post", "shorturls.delete",
		"uploadtokens.post", "uploadtoken.delete",
		"uploads.post", "uploads.head", "uploads.patch", "uploads.delete", "uploads.options",
	)
	// allResources carries both Imbo 2.x's names of the key resources
	// (keys.put, keys.head, keys.delete) and 3.x's, so rules written for
	// either keep working.
	allResources = append(slices.Clone(readWriteResources),
		"user.delete",
		"keys.put", "keys.head", "keys.delete", "keys.options", "keys.post", "keys.get",
		"key.put", "key.head", "key.delete", "key.options",
		"accessrule.get", "accessrule.head", "accessrule.delete", "accessrule.options",
		"accessrules.get", "accessrules.head", "accessrules.post", "accessrules.options",
		"groups.get", "groups.head", "groups.post", "groups.options",
		"group.get", "group.head", "group.put", "group.delete", "group.options",
		"filters.get", "filters.head", "filters.post", "filters.options",
		"filters.put", "filters.patch", "filters.delete",
		"audit.get", "audit.head", "audit.options",
		"usage.get", "usage.head", "usage.options",
		"webhooks.get", "webhooks.head", "webhooks.post", "webhooks.options",
		"webhook.get", "webhook.head", "webhook.put", "webhook.delete", "webhook.options",
		"webhookping.post", "webhookping.options",
		"webhookdeliveries.get", "webhookdeliveries.head", "webhookdeliveries.options",
		"webhookdelivery.get", "webhookdelivery.head", "webhookdelivery.post", "webhookdelivery.options",
		"blocklist.get", "blocklist.head", "blocklist.post", "blocklist.delete", "blocklist.options",
		"quota.put",
	)
	builtinGroups = map[string][]string{
		"read-only":  readOnlyResources,
		"read-write": readWriteResources,
		"all":        allResources,
	}
)

// knownResources are the names rules and groups may use.
var knownResources = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range allResources {
		m[r] = true
	}
	return m
}()

// unknownResource returns an error naming the first resource that does not
// exist, so that a typo (image.gett) is refused rather than stored.
func unknownResource(resources []string) error {
	for _, r := range resources {
		if !knownResources[r] {
			return errorf(http.StatusBadRequest, "Resource '%s' does not exist", r)
		}
	}
	return nil
}

// Resources returns, sorted, every resource an access rule may grant:
// those of the built-in group all.
func Resources() []string {
	res := slices.Clone(allResources)
	slices.Sort(res)
	return res
}

// BuiltinGroups returns the names of the groups every deployment has.
func BuiltinGroups() []string {
	names := make([]string, 0, len(builtinGroups))
	for n := range builtinGroups {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// accessControl answers who may do what: configured keys (immutable) and,
// always, keys stored in the database (the generated admin key, and those
// managed through the API when accessControl.database is on).
type accessControl struct {
	keys   map[string]ConfigKey
	groups map[string][]string
	db     aclReader
	// mutable is true when keys, groups and rules may change through the API.
	mutable bool
}

// newAccessControl holds the configured keys and groups (and the built-in
// groups), and reads the others from db.
func newAccessControl(cfg AccessControl, db aclReader) *accessControl {
	a := &accessControl{keys: map[string]ConfigKey{}, groups: map[string][]string{}, db: db, mutable: cfg.Database}
	for name, res := range builtinGroups {
		a.groups[name] = res
	}
	for name, res := range cfg.Groups {
		a.groups[name] = res
	}
	for _, k := range cfg.Keys {
		a.keys[k.PublicKey] = k
	}
	return a
}

// key returns the private key and rules of publicKey; ok is false when it
// is unknown.
func (a *accessControl) key(ctx context.Context, publicKey string) (private string, rules []storage.Rule, ok bool, err error) {
	if k, found := a.keys[publicKey]; found {
		for i, r := range k.Rules {
			rules = append(rules, storage.Rule{ID: int64(i + 1), PublicKey: publicKey, Group: r.Group,
				Resources: r.Resources, Users: r.Users})
		}
		return k.PrivateKey, rules, true, nil
	}
	if publicKey == "" {
		return "", nil, false, nil
	}
	k, err := a.db.Key(ctx, publicKey)
	if errors.Is(err, storage.ErrNotExist) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, err
	}
	rules, err = a.db.Rules(ctx, publicKey)
	if err != nil {
		return "", nil, false, err
	}
	return k.PrivateKey, rules, true, nil
}

// group returns a group's resources.
func (a *accessControl) group(ctx context.Context, name string) ([]string, bool, error) {
	if res, ok := a.groups[name]; ok {
		return res, true, nil
	}
	g, err := a.db.Group(ctx, name)
	if errors.Is(err, storage.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return g.Resources, true, nil
}

// allows reports whether rules grant resource on user ("" for routes
// without a user: any rule applies).
func (a *accessControl) allows(ctx context.Context, rules []storage.Rule, resource, user string) (bool, error) {
	for _, r := range rules {
		if user != "" && !slices.Contains(r.Users, "*") && !slices.Contains(r.Users, user) {
			continue
		}
		res, err := a.ruleResources(ctx, r)
		if err != nil {
			return false, err
		}
		if slices.Contains(res, resource) {
			return true, nil
		}
	}
	return false, nil
}

// ruleResources returns the resources r grants: its own, or its group's.
func (a *accessControl) ruleResources(ctx context.Context, r storage.Rule) ([]string, error) {
	if r.Group == "" {
		return r.Resources, nil
	}
	g, ok, err := a.group(ctx, r.Group)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("acl: rule %d of %s uses undefined group %q", r.ID, r.PublicKey, r.Group)
	}
	return g, nil
}

// deniedUsers returns those of users that rules do not grant images.get
// on.
func (a *accessControl) deniedUsers(ctx context.Context, rules []storage.Rule, users []string) ([]string, error) {
	var denied []string
	for _, u := range users {
		ok, err := a.allows(ctx, rules, "images.get", u)
		if err != nil {
			return nil, err
		}
		if !ok {
			denied = append(denied, u)
		}
	}
	return denied, nil
}

// The refusals of access control keep Imbo's phrase, "Permission denied
// (public key)", first (its clients match on it) and say after it which
// of the reasons it is and what to do (api/README.md, Errors).

// unknownKey refuses a call whose key the server does not hold, saying
// whether a key was given at all: without one, the path user stands in.
func (c *call) unknownKey() *Error {
	if c.keyFrom == "" {
		return errorf(http.StatusBadRequest, "Permission denied (public key): no public key was given and the path's user %q is not a key; "+
			"send %s or publicKey= naming your key, and %s", c.publicKey, c.header("PublicKey"), c.credentialHint())
	}
	return errorf(http.StatusBadRequest, "Permission denied (public key): unknown public key %q (%s); "+
		"check the key's name, or create it (vitrine keys add, or PUT /keys/<publicKey>)", c.publicKey, c.keyFrom)
}

// notGranted refuses a call of a known key whose rules do not grant the
// call's resource on the path user (on "*" for the service-wide routes).
func (c *call) notGranted(resource string) *Error {
	on := ""
	switch u := c.ruleUser(); u {
	case "":
	case "*":
		on = ` on every user ("*", which this route needs)`
	default:
		on = fmt.Sprintf(" on user %q", u)
	}
	return errorf(http.StatusBadRequest, "Permission denied (public key): the access rules of key %q do not grant %s%s; "+
		"use a key that holds it, or add a rule that grants it (POST /keys/%s/access)", c.publicKey, resource, on, c.publicKey)
}

// credentialHint is what the call needs beside its key: an access token
// for a read, a signature for a write (every request of a resumable
// upload is signed like one).
func (c *call) credentialHint() string {
	if (c.method == http.MethodGet || c.method == http.MethodHead) && c.route.name != "uploads" {
		return "accessToken=, the URL signed with its private key (vitrine sign prints it)"
	}
	return "sign the request with its private key (vitrine sign prints the headers)"
}

// checkAccess is the access-control listener (priority 500): the acting key
// must exist and hold the event's resource for the path user.
func (s *Server) checkAccess(ctx context.Context, ev *Event) error {
	c := ev.call
	// An upload token was checked (useUploadToken), its issuing key's
	// right to upload included.
	if c.route.public() || c.token != nil {
		return nil
	}
	if c.publicKey == "" {
		return errorf(http.StatusBadRequest, "Missing public key: send %s or publicKey= naming your key, and %s",
			c.header("PublicKey"), c.credentialHint())
	}
	_, rules, ok, err := s.acl.key(ctx, c.publicKey)
	if err != nil {
		return err
	}
	if !ok {
		return c.unknownKey()
	}
	// A key may always read its own access rules.
	if (c.route.name == "accessrules" || c.route.name == "accessrule") && c.params["pk"] == c.publicKey &&
		(c.method == http.MethodGet || c.method == http.MethodHead || c.method == http.MethodOptions) {
		return nil
	}
	allowed, err := s.acl.allows(ctx, rules, ev.Name, c.ruleUser())
	if err != nil {
		return err
	}
	if !allowed {
		return c.notGranted(ev.Name)
	}
	return nil
}

// ruleID parses a rule id path segment.
func ruleID(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
