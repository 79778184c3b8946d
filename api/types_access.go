package api

import (
	"encoding/json"
	"slices"
)

// The JSON bodies of access control: resource groups, public keys and
// access rules (types.go says how the answer types are used).

// Group is a resource group.
type Group struct {
	Name      string   `json:"name"`
	Resources []string `json:"resources"`
	// Source is where the group is defined: "builtin", "config" or
	// "database"; Mutable says whether PUT and DELETE may change it.
	Source  string `json:"source,omitempty"`
	Mutable bool   `json:"mutable"`
}

// GroupList is GET /groups.
type GroupList struct {
	Search Search  `json:"search"`
	Groups []Group `json:"groups"`
	// Mutable is false when no group can change through the API.
	Mutable bool `json:"mutable"`
}

// KeyEntry is one public key of GET /keys.
type KeyEntry struct {
	PublicKey string `json:"publicKey"`
	Source    string `json:"source"`
	Mutable   bool   `json:"mutable"`
}

// KeyList is GET /keys.
type KeyList struct {
	Keys []KeyEntry `json:"keys"`
	// Mutable is false when keys cannot change through the API.
	Mutable bool `json:"mutable"`
}

// Rule is an access rule: a group or resources, for users ("*" for every
// user). With expandGroups a group rule lists its group's resources too.
type Rule struct {
	ID        int64    `json:"id"`
	Group     string   `json:"group,omitempty"`
	Resources []string `json:"resources,omitempty"`
	Users     Users    `json:"users"`
}

// UnmarshalJSON reads "*" or an array of names.
func (u *Users) UnmarshalJSON(b []byte) error {
	var all string
	if json.Unmarshal(b, &all) == nil {
		*u = Users{all}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*u = list
	return nil
}

// Covers reports whether the users include user; with user "" (routes
// without a user) every rule applies, as the API decides.
func (u Users) Covers(user string) bool {
	return user == "" || slices.Contains(u, "*") || slices.Contains(u, user)
}
