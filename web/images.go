package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// usersView lists the users the key can browse.
type usersView struct {
	Page  pageView
	Users []userStat
	Note  string
}

// users lists the users the service reports (statistics) and those the
// key's own rules name, each with its image count.
func (u *UI) users(q *request) error {
	if name := strings.TrimSpace(q.r.URL.Query().Get("user")); name != "" {
		return q.redirect("/users/" + url.PathEscape(name))
	}
	ctx := q.r.Context()
	v := usersView{Page: q.page("Images", "images")}
	names := map[string]bool{}
	var stats struct {
		Users map[string]json.RawMessage
	}
	if err := q.api.getJSON(ctx, "/stats", nil, &stats); err == nil {
		for n := range stats.Users {
			names[n] = true
		}
	}
	var rules []struct {
		Users any `json:"users"`
	}
	if err := q.api.getJSON(ctx, "/keys/"+url.PathEscape(q.sess.PublicKey)+"/access", nil, &rules); err == nil {
		for _, r := range rules {
			if list, ok := r.Users.([]any); ok {
				for _, x := range list {
					if s, ok := x.(string); ok {
						names[s] = true
					}
				}
			}
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	for _, n := range sorted {
		var info struct {
			NumImages int `json:"numImages"`
		}
		st := userStat{User: n, Href: q.path("/users/" + url.PathEscape(n)), Images: -1}
		if err := q.api.getJSON(ctx, "/users/"+url.PathEscape(n), nil, &info); err == nil {
			st.Images = info.NumImages
		}
		v.Users = append(v.Users, st)
	}
	if len(v.Users) == 0 {
		v.Note = "No users to show yet. Upload an image, or open a user by name."
	}
	return q.render(200, usersPage(v))
}

// imagesView is one user's image grid with its filters.
type imagesView struct {
	Page                         pageView
	User                         string
	Sort                         string
	Sorts                        []option
	IDs, Checksums, Originals    string
	Metadata, MetadataError      string
	Limit                        int
	Hits, PageNo, Pages          int
	Thumbs                       []thumbView
	PrevHref, NextHref, ResetRef string
	Error                        string
}

type option struct{ Value, Label string }

var sortOptions = []option{
	{"added:desc", "Newest first"}, {"added:asc", "Oldest first"}, {"size:desc", "Largest file first"},
	{"size:asc", "Smallest file first"}, {"width:desc", "Widest first"}, {"imageIdentifier:asc", "Identifier A–Z"},
}

// images shows a user's images: a thumbnail grid with sort, filters and
// paging, all done by the API's listing.
func (u *UI) images(q *request) error {
	user := q.r.PathValue("user")
	in := q.r.URL.Query()
	v := imagesView{Page: q.page("Images of "+user, "images"), User: user, Sorts: sortOptions,
		Sort: in.Get("sort"), IDs: in.Get("ids"), Checksums: in.Get("checksums"), Originals: in.Get("originalChecksums"),
		Metadata: in.Get("metadata"), Limit: 24, PageNo: 1, ResetRef: q.path("/users/" + url.PathEscape(user))}
	if d := in.Get("deleted"); d != "" {
		v.Page.Notice = "Image " + d + " was deleted."
	}
	if !slices.ContainsFunc(sortOptions, func(o option) bool { return o.Value == v.Sort }) {
		v.Sort = sortOptions[0].Value
	}
	if n, err := strconv.Atoi(in.Get("page")); err == nil && n > 0 {
		v.PageNo = n
	}
	params := url.Values{"page": {strconv.Itoa(v.PageNo)}, "limit": {strconv.Itoa(v.Limit)}, "sort[]": {v.Sort}}
	for name, raw := range map[string]string{"ids[]": v.IDs, "checksums[]": v.Checksums, "originalChecksums[]": v.Originals} {
		for _, f := range strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
			params.Add(name, f)
		}
	}
	if err := addMetadataFilter(params, v.Metadata); err != nil {
		v.MetadataError = err.Error()
		return q.render(http.StatusBadRequest, imagesPage(v))
	}
	l, err := q.list(q.r.Context(), "/users/"+url.PathEscape(user)+"/images", params)
	if msg, denied := denial(err); denied {
		v.Page.Denied = append(v.Page.Denied, "listing the images of "+user+" ("+msg+")")
		return q.render(http.StatusForbidden, imagesPage(v))
	} else if ae, ok := err.(*apiError); ok && ae.Status == http.StatusBadRequest {
		if isMetadataFilterError(ae.Message) {
			v.MetadataError = ae.Message
		} else {
			v.Error = ae.Message
		}
		return q.render(http.StatusBadRequest, imagesPage(v))
	} else if err != nil {
		return err
	}
	v.Hits, v.Thumbs = l.Search.Hits, q.thumbs(l.Images)
	v.Pages = max(1, (v.Hits+v.Limit-1)/v.Limit)
	link := func(page int) string {
		p := url.Values{"page": {strconv.Itoa(page)}, "sort": {v.Sort}}
		for k, val := range map[string]string{"ids": v.IDs, "checksums": v.Checksums, "originalChecksums": v.Originals, "metadata": v.Metadata} {
			if val != "" {
				p.Set(k, val)
			}
		}
		return v.ResetRef + "?" + p.Encode()
	}
	if v.PageNo > 1 {
		v.PrevHref = link(v.PageNo - 1)
	}
	if v.PageNo < v.Pages {
		v.NextHref = link(v.PageNo + 1)
	}
	return q.render(200, imagesPage(v))
}

// countLabel is "1 image" or "n images".
func countLabel(n int) string {
	if n == 1 {
		return "1 image"
	}
	return fmt.Sprintf("%d images", n)
}

func jsonInto(b []byte, v any) error { return json.Unmarshal(b, v) }
