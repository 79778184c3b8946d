package web

import (
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// accessView answers "what may key K do on user U".
type accessView struct {
	Page    pageView
	Action  string
	Key     string
	User    string
	Keys    []string
	Rows    []accessRow
	Checked bool
	// KeyError says the key asked about does not exist.
	KeyError string
	Allowed  int
	Total    int
}

// accessRow is one resource family (images, metadata, ...) and which of
// its methods the key holds.
type accessRow struct {
	Resource string
	Allowed  []string
	Denied   []string
}

// access computes a key's effective access from its rules with groups
// expanded, as the API reports them, against every resource there is
// (api.Resources, the built-in group all). Any key may check its own.
func (u *UI) access(q *request) error {
	ctx := q.r.Context()
	in := q.r.URL.Query()
	v := accessView{Page: q.page("Effective access", "keys"), Action: q.path("/access"),
		Key: strings.TrimSpace(in.Get("key")), User: strings.TrimSpace(in.Get("user"))}
	var keys api.KeyList
	if q.mayAny("keys.get") {
		if err := q.api.getJSON(ctx, "/keys", nil, &keys); err == nil {
			for _, k := range keys.Keys {
				v.Keys = append(v.Keys, k.PublicKey)
			}
		}
	}
	if v.Key == "" {
		v.Key = q.sess.PublicKey
	}
	all := api.Resources()
	var rules []api.Rule
	err := q.api.getJSON(ctx, "/keys/"+url.PathEscape(v.Key)+"/access", url.Values{"expandGroups": {"1"}}, &rules)
	if msg, denied := denial(err); denied {
		v.Page.Denied = append(v.Page.Denied, "reading the access rules of "+v.Key+" ("+msg+")")
		return q.render(http.StatusForbidden, accessPage(v))
	} else if ae := (*apiError)(nil); errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		v.KeyError = noSuch("key", v.Key, "")
		return q.render(http.StatusNotFound, accessPage(v))
	} else if err != nil {
		return err
	}
	granted := map[string]bool{}
	for _, r := range rules {
		if !r.Users.Covers(v.User) {
			continue
		}
		for _, res := range r.Resources {
			granted[res] = true
		}
	}
	families := map[string]*accessRow{}
	for _, res := range all {
		fam, method, _ := strings.Cut(res, ".")
		row, ok := families[fam]
		if !ok {
			row = &accessRow{Resource: fam}
			families[fam] = row
		}
		if granted[res] {
			row.Allowed = append(row.Allowed, method)
			v.Allowed++
		} else {
			row.Denied = append(row.Denied, method)
		}
		v.Total++
	}
	for _, row := range families {
		v.Rows = append(v.Rows, *row)
	}
	sort.Slice(v.Rows, func(i, j int) bool { return v.Rows[i].Resource < v.Rows[j].Resource })
	v.Checked = true
	return q.render(http.StatusOK, accessPage(v))
}
