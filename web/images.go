package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// usersView lists the users the key can browse.
type usersView struct {
	Page  pageView
	Users []userStat
	Note  string
}

// maxUsers bounds the users list; others are opened by name.
const maxUsers = 200

// users lists the users whose images the key may read, each with its
// image count: those with images in the cross-user listing (GET /images
// lists exactly the users the key may read) and those the key's own rules
// name. Why not /stats: it is gated by the client's address, not the key.
func (u *UI) users(q *request) error {
	if name := strings.TrimSpace(q.r.URL.Query().Get("user")); name != "" {
		return q.redirect("/users/" + url.PathEscape(name))
	}
	ctx := q.r.Context()
	v := usersView{Page: q.page("Images", "images")}
	counts := map[string]int{}
	listed, err := q.listedUsers(ctx, counts)
	if err != nil {
		return err
	}
	rules, err := q.ownRules(ctx)
	if err != nil {
		return err
	}
	for _, r := range rules {
		for _, n := range r.Users {
			if _, ok := counts[n]; !ok && n != "*" && len(counts) < maxUsers {
				counts[n] = q.imageCount(ctx, n)
			}
		}
	}
	sorted := make([]string, 0, len(counts))
	for n := range counts {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	for _, n := range sorted {
		v.Users = append(v.Users, userStat{User: n, Href: q.path("/users/" + url.PathEscape(n)), Images: counts[n]})
	}
	switch {
	case len(v.Users) >= maxUsers:
		v.Note = fmt.Sprintf("Showing the first %d users; open any other by name.", maxUsers)
	case len(v.Users) == 0 && !listed:
		v.Note = "Your key may not list images across users, and its rules name no user: open a user by name."
	case len(v.Users) == 0:
		v.Note = "No users to show yet. Upload an image, or open a user by name."
	}
	return q.render(http.StatusOK, usersPage(v))
}

// listedUsers adds every user of the cross-user listing to counts with its
// number of images, walking the listing sorted by user: the image at
// offset n belongs to the next user once the users before it are counted.
// listed is false when the key may not use that listing.
func (q *request) listedUsers(ctx context.Context, counts map[string]int) (listed bool, err error) {
	for offset := 0; len(counts) < maxUsers; {
		l, err := q.list(ctx, "/images", url.Values{"sort[]": {"user:asc"}, "limit": {"1"},
			"page": {strconv.Itoa(offset + 1)}, "fields[]": {"user"}})
		if _, denied := denial(err); denied {
			return false, nil
		} else if err != nil {
			return false, err
		}
		if len(l.Images) == 0 {
			return true, nil
		}
		name := l.Images[0].User
		n := q.imageCount(ctx, name)
		counts[name] = n
		offset += max(n, 1)
	}
	return true, nil
}

// imageCount is the number of images of user, or -1 when the key may not
// list them.
func (q *request) imageCount(ctx context.Context, user string) int {
	l, err := q.list(ctx, "/users/"+url.PathEscape(user)+"/images", url.Values{"limit": {"1"}, "fields[]": {"imageIdentifier"}})
	var ae *apiError
	switch {
	case err == nil:
		return l.Search.Hits
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		return 0 // a user without images or key of that name
	}
	return -1
}

// imagesView is one user's image grid with its filters.
type imagesView struct {
	Page                      pageView
	User                      string
	Sort                      string
	Sorts                     []option
	IDs, Checksums, Originals string
	// Users filters the search across users (empty on one user's grid).
	Users string
	// Self is the address of this very page of the grid.
	Self string
	// Search is set on the search across users.
	Search bool
	// Bulk offers ticking images for bulk actions; BulkFailures lists the
	// images the last one left as they were.
	Bulk, CanBulkDelete, CanBulkMetadata bool
	BulkFailures                         []string
	Metadata, MetadataError              string
	Limit                                int
	Hits, PageNo, Pages                  int
	Thumbs                               []thumbView
	PrevHref, NextHref, ResetRef         string
	Error                                string
	CanUpload                            bool
	// CanErase offers the user's erasure; Erasing leads to the erasure
	// under way.
	CanErase bool
	Erasing  string
	// Listed is set once the listing answered: the count means something.
	Listed bool
	// FirstHref and LastHref lead back from a page past the last one.
	FirstHref, LastHref string
	// Quota is the user's quotas and usage, when the key may read them
	// (a user's grid only).
	Quota *quotaView
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
	if !validName(user) {
		return &apiError{Status: http.StatusNotFound, Message: noSuch("user", user, "")}
	}
	return u.renderImages(q, user, 0, nil)
}

// renderImages writes a user's page: its quotas (with the form as posted,
// when form is set) and its image grid; status, when not 0, overrides the
// grid's.
func (u *UI) renderImages(q *request, user string, status int, form *quotaView) error {
	v := q.listingView("Images of "+user, "/users/"+url.PathEscape(user))
	v.User, v.CanUpload, v.CanErase = user, q.may("images.post", user), q.may("user.delete", user)
	switch in := q.r.URL.Query(); {
	case in.Get("deleted") != "":
		v.Page.Notice = "Image " + in.Get("deleted") + " was deleted."
	case in.Get("done") == "quota":
		v.Page.Notice = "Quotas saved."
	}
	q.takeBulkResult(&v)
	var e api.Erasure
	if err := q.api.getJSON(q.r.Context(), "/users/"+url.PathEscape(user)+"/erasure", nil, &e); err == nil && e.State != "done" {
		v.Erasing, v.CanUpload, v.CanErase = q.userPath(user)+"/erasure", false, false
	}
	listed, err := q.runListing(&v, "/users/"+url.PathEscape(user)+"/images", nil)
	if err != nil {
		if v.Erasing != "" {
			return q.redirect("/users/" + url.PathEscape(user) + "/erasure")
		}
		return notFoundAs(err, noSuch("user", user, ": no image is stored for it and no key has its name"))
	}
	if err := q.loadQuota(&v, form); err != nil {
		return err
	}
	q.offerBulk(&v, user)
	if status == 0 {
		status = listed
	}
	return q.render(status, imagesPage(v))
}

// listingView reads a grid's sort, filters and page from the query; base
// is the grid's path under the prefix.
func (q *request) listingView(title, base string) imagesView {
	in := q.r.URL.Query()
	v := imagesView{Page: q.page(title, "images"), Sorts: sortOptions,
		Sort: in.Get("sort"), IDs: in.Get("ids"), Checksums: in.Get("checksums"), Originals: in.Get("originalChecksums"),
		Metadata: in.Get("metadata"), Users: in.Get("users"), Limit: 24, PageNo: 1, ResetRef: q.path(base)}
	if !slices.ContainsFunc(sortOptions, func(o option) bool { return o.Value == v.Sort }) {
		v.Sort = sortOptions[0].Value
	}
	if n, err := strconv.Atoi(in.Get("page")); err == nil && n > 0 {
		v.PageNo = n
	}
	return v
}

// listFields splits a filter field into its values.
func listFields(raw string) []string {
	return strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' })
}

// runListing asks the API's listing at apiPath for v's page and fills the
// grid, returning the page's status; a refusal for the input or the key
// is shown on the page, other errors are returned.
func (q *request) runListing(v *imagesView, apiPath string, extra url.Values) (int, error) {
	params := url.Values{"page": {strconv.Itoa(v.PageNo)}, "limit": {strconv.Itoa(v.Limit)}, "sort[]": {v.Sort}}
	for k, vals := range extra {
		params[k] = vals
	}
	for name, raw := range map[string]string{"ids[]": v.IDs, "checksums[]": v.Checksums, "originalChecksums[]": v.Originals} {
		for _, f := range listFields(raw) {
			params.Add(name, f)
		}
	}
	if err := addMetadataFilter(params, v.Metadata); err != nil {
		v.MetadataError = err.Error()
		return http.StatusBadRequest, nil
	}
	l, err := q.list(q.r.Context(), apiPath, params)
	if msg, denied := denial(err); denied {
		v.Page.Denied = append(v.Page.Denied, "listing these images ("+msg+")")
		return http.StatusForbidden, nil
	} else if ae, ok := err.(*apiError); ok && ae.Status == http.StatusBadRequest {
		if isMetadataFilterError(ae.Message) {
			v.MetadataError = ae.Message
		} else {
			v.Error = ae.Message
		}
		return http.StatusBadRequest, nil
	} else if err != nil {
		return 0, err
	}
	v.Hits, v.Thumbs, v.Listed = l.Search.Hits, q.thumbs(l.Images), true
	v.Pages = max(1, (v.Hits+v.Limit-1)/v.Limit)
	link := func(page int) string {
		p := url.Values{"page": {strconv.Itoa(page)}, "sort": {v.Sort}}
		for k, val := range map[string]string{"ids": v.IDs, "checksums": v.Checksums, "originalChecksums": v.Originals,
			"metadata": v.Metadata, "users": v.Users} {
			if val != "" {
				p.Set(k, val)
			}
		}
		return v.ResetRef + "?" + p.Encode()
	}
	if v.PageNo > v.Pages {
		// A page past the last one (an old link, a typed number): say so
		// and lead back, rather than "page 999 of 9".
		v.FirstHref, v.LastHref = link(1), link(v.Pages)
		return http.StatusNotFound, nil
	}
	if v.PageNo > 1 {
		v.PrevHref = link(v.PageNo - 1)
	}
	if v.PageNo < v.Pages {
		v.NextHref = link(v.PageNo + 1)
	}
	v.Self = link(v.PageNo)
	return http.StatusOK, nil
}

// countLabel is "1 image" or "n images".
func countLabel(n int) string {
	if n == 1 {
		return "1 image"
	}
	return fmt.Sprintf("%d images", n)
}

// matchVerb agrees with countLabel: "1 image matches", "2 images match".
func matchVerb(n int) string {
	if n == 1 {
		return "matches"
	}
	return "match"
}

// FilterCount is the number of filters set; the filters stay open while
// any is, or while one has an error.
func (v imagesView) FilterCount() int {
	n := 0
	for _, f := range []string{v.IDs, v.Checksums, v.Originals, v.Metadata} {
		if strings.TrimSpace(f) != "" {
			n++
		}
	}
	return n
}

// Filtered reports whether the filters are to be shown open.
func (v imagesView) Filtered() bool { return v.FilterCount() > 0 || v.MetadataError != "" }

// pagesLabel is "1 page" or "n pages".
func pagesLabel(n int) string {
	if n == 1 {
		return "1 page"
	}
	return fmt.Sprintf("%d pages", n)
}
