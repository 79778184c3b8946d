package web

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// rule is one access rule as GET /keys/<pk>/access?expandGroups=1
// returns it: a group's resources filled in, users "*" or a list.
type rule struct {
	ID        json.Number `json:"id"`
	Group     string      `json:"group"`
	Resources []string    `json:"resources"`
	Users     users       `json:"users"`
}

// grants says what a rule grants: its group, or its resources.
func (r rule) grants() string {
	if r.Group != "" {
		return "group " + r.Group
	}
	return strings.Join(r.Resources, ", ")
}

// users is a rule's users: ["*"] for every user.
type users []string

// UnmarshalJSON reads "*" or an array of names.
func (u *users) UnmarshalJSON(b []byte) error {
	var all string
	if json.Unmarshal(b, &all) == nil {
		*u = users{all}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*u = list
	return nil
}

// covers reports whether the users include user; with user "" (routes
// without a user) every rule applies, as the API decides.
func (u users) covers(user string) bool {
	return user == "" || slices.Contains(u, "*") || slices.Contains(u, user)
}

// ownRules returns the signed-in key's rules with groups expanded, read
// once per request; a key may always read its own rules.
func (q *request) ownRules(ctx context.Context) ([]rule, error) {
	if q.rules != nil {
		return *q.rules, nil
	}
	var rs []rule
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
		if r.Users.covers(user) && slices.Contains(r.Resources, resource) {
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
