package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Every route names the users its resource reaches, so that a rule's
// users bound every route (api/README.md, The API): the route table in
// server.go is checked against this one when a Server is built, and the
// access matrix test (accessmatrix_test.go) calls every route with keys of
// every shape against it.

// scope is how a route's resource meets a rule's users.
type scope int

const (
	// scopePublic: no key needed (the index, /status, /stats, ...).
	scopePublic scope = iota
	// scopePath: the {user} of the path; a rule must name it or "*".
	scopePath
	// scopeAny: the interface's routes without a user (keys, groups,
	// access rules): a rule on any users grants them, as the interface
	// specifies.
	scopeAny
	// scopeOwned: routes without a user whose records belong to users
	// (/images, webhook subscriptions and their deliveries, the audit
	// log): a rule
	// on any users lets the call in, and the handler keeps to the users
	// the rules grant (grantedUsers).
	scopeOwned
	// scopeService: service-wide routes (filters, the blocklist, usage):
	// what they change or show spans every user, so only a rule on "*"
	// grants them.
	scopeService
)

// routeScopes gives each route name its scope. A route whose name is not
// here stops New, so no new resource can skip the access rules' users.
var routeScopes = map[string]scope{
	"index": scopePublic, "status": scopePublic, "stats": scopePublic, "transformations": scopePublic,
	"globalshorturl": scopePublic,

	"user": scopePath, "quota": scopePath, "images": scopePath, "image": scopePath, "metadata": scopePath,
	"shorturls": scopePath, "shorturl": scopePath, "variants": scopePath, "uploadtokens": scopePath,
	"uploadtoken": scopePath, "uploads": scopePath,

	"groups": scopeAny, "group": scopeAny, "keys": scopeAny, "accessrules": scopeAny,
	"accessrule": scopeAny,

	"webhooks": scopeOwned, "webhook": scopeOwned, "webhookping": scopeOwned, "webhookdeliveries": scopeOwned,
	"webhookdelivery": scopeOwned, "audit": scopeOwned, "globalimages": scopeOwned,

	"filters": scopeService, "usage": scopeService, "blocklist": scopeService,
}

// checkScopes reports a route without a scope, or a scopePath route
// without {user} in its path.
func checkScopes(routes []*route) error {
	for _, r := range routes {
		sc, ok := routeScopes[r.name]
		if !ok {
			return fmt.Errorf("api: route %s (/%s) has no access scope (scope.go)", r.name, strings.Join(r.segs, "/"))
		}
		if (sc == scopePath) != slices.Contains(r.segs, "{user}") {
			return fmt.Errorf("api: route %s (/%s): scope %d does not fit its path", r.name, strings.Join(r.segs, "/"), sc)
		}
	}
	return nil
}

// public reports whether the route needs no key.
func (r *route) public() bool { return routeScopes[r.name] == scopePublic }

// ruleUser is the user a rule must name for the call: the path's for
// scopePath, "*" for scopeService, "" (any) for the others.
func (c *call) ruleUser() string {
	switch routeScopes[c.route.name] {
	case scopePath:
		return c.params["user"]
	case scopeService:
		return "*"
	}
	return ""
}

// granted are the users the acting key's rules grant a resource on.
type granted struct {
	all   bool
	users []string
}

// has reports whether every one of users is granted; "*" among them
// needs all.
func (g granted) has(users ...string) bool {
	if g.all {
		return true
	}
	for _, u := range users {
		if u == "*" || !slices.Contains(g.users, u) {
			return false
		}
	}
	return true
}

// grantedUsers returns the users the call's key may reach with the
// call's resource (an upload token's call: none beyond its path).
func (s *Server) grantedUsers(c *call) (granted, error) {
	_, rules, ok, err := s.acl.key(c.ctx(), c.publicKey)
	if err != nil || !ok {
		return granted{}, err
	}
	var g granted
	for _, r := range rules {
		res, err := s.acl.ruleResources(c.ctx(), r)
		if err != nil {
			return granted{}, err
		}
		if !slices.Contains(res, c.event()) {
			continue
		}
		if slices.Contains(r.Users, "*") {
			return granted{all: true}, nil
		}
		g.users = append(g.users, r.Users...)
	}
	return g, nil
}

// ownedBy refuses a call on a record of users that the key's rules do
// not grant the call's resource on.
func (s *Server) ownedBy(c *call, what string, users []string) error {
	g, err := s.grantedUsers(c)
	if err != nil {
		return err
	}
	if g.has(users...) {
		return nil
	}
	return errorf(http.StatusBadRequest, "Permission denied (public key): %s %s users the key's rules for %s do not grant (%s)",
		what, describeUsers(users), c.event(), describeUsers(g.users))
}

// describeUsers names users for a message.
func describeUsers(users []string) string {
	if len(users) == 0 {
		return "none"
	}
	return strings.Join(users, ", ")
}

var scopeNames = map[scope]string{scopePublic: "public", scopePath: "path", scopeAny: "any", scopeOwned: "owned",
	scopeService: "service"}
