package web

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// grants says what a rule grants: its group, or its resources.
func grants(r api.Rule) string {
	if r.Group != "" {
		return "group " + r.Group
	}
	return strings.Join(r.Resources, ", ")
}

// ruleID is a rule's id as pages show it.
func ruleID(r api.Rule) string { return strconv.FormatInt(r.ID, 10) }

// ownRules returns the signed-in key's rules with groups expanded, read
// once per request; a key may always read its own rules.
func (q *request) ownRules(ctx context.Context) ([]api.Rule, error) {
	if q.rules != nil {
		return *q.rules, nil
	}
	var rs []api.Rule
	if err := q.api.getJSON(ctx, "/keys/"+url.PathEscape(q.sess.PublicKey)+"/access", url.Values{"expandGroups": {"1"}}, &rs); err != nil {
		return nil, err
	}
	q.rules = &rs
	return rs, nil
}

// may reports whether the signed-in key's rules grant resource (such as
// "metadata.put") on user, as the API decides; user "" is for resources
// without a user. Pages offer only what the key may do; the API still
// decides every request.
func (q *request) may(resource, user string) bool {
	if q.rules == nil {
		return false
	}
	for _, r := range *q.rules {
		if r.Users.Covers(user) && slices.Contains(r.Resources, resource) {
			return true
		}
	}
	return false
}

// mayAny reports whether the key holds resource on any user at all.
func (q *request) mayAny(resource string) bool { return q.may(resource, "") }

// uploadUsers lists the users the key may upload for; every user is "*".
func (q *request) uploadUsers() []string {
	var out []string
	if q.rules != nil {
		for _, r := range *q.rules {
			if slices.Contains(r.Resources, "images.post") {
				out = append(out, r.Users...)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
