package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// The blocklist pages (api/README.md "Takedowns"): the entries, forms that add
// one by checksum, by perceptual hash or from an image of the service
// (its checksum and its hash), an entry's page with the stored images it
// matches, and their removal and the entry's deletion after a
// confirmation each.

// blocklistView is the list of entries and the forms that add one.
type blocklistView struct {
	Page    pageView
	Entries []blocklistRow
	// Hits counts every entry; PageNo of Pages is shown.
	Hits, PageNo, Pages int
	PrevHref, NextHref  string
	CanAdd              bool
	Form                blocklistForm
}

// blocklistRow is an entry as the pages show it.
type blocklistRow struct {
	api.BlocklistEntry
	Href string
	// Kind is "Checksum" or "Perceptual hash"; Value the checksum, or the
	// hash; Within the distance ("within 6 bits"), "" for a checksum.
	Kind, Value, Within string
	Created             string
}

// blocklistForm is one of the three add forms, as typed, with the API's
// refusal; Kind says which ("checksum", "phash" or "image").
type blocklistForm struct {
	Kind                                           string
	Checksum, PHash, Distance, User, Image, Reason string
	Error                                          string
}

// blocklistEntryView is an entry's page: the entry, the images it
// matches and what may be done with them.
type blocklistEntryView struct {
	Page    pageView
	Entry   blocklistRow
	Matches []thumbView
	// Hits counts every match; PageNo of Pages is shown.
	Hits, PageNo, Pages          int
	PrevHref, NextHref           string
	CanRemove, CanDelete         bool
	RemoveHref, DeleteHref, Back string
}

const (
	blocklistPageSize = 50
	matchesPageSize   = 48
)

// blocklistRowOf is e as the pages show it.
func (q *request) blocklistRowOf(e api.BlocklistEntry) blocklistRow {
	r := blocklistRow{BlocklistEntry: e, Href: q.path("/blocklist/" + strconv.FormatInt(e.ID, 10)), Created: utcTime(e.Created)}
	switch {
	case e.Checksum != nil:
		r.Kind, r.Value = "Checksum", *e.Checksum
	case e.PHash != nil && e.Distance != nil:
		r.Kind, r.Value, r.Within = "Perceptual hash", *e.PHash, "within "+plural(*e.Distance, "bit", "bits")
	}
	return r
}

// pageNo reads the page query parameter, 1 when absent or bad.
func pageNo(q url.Values) int {
	n, err := strconv.Atoi(q.Get("page"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// pagerLinks are the previous and next page links of page n of pages,
// base being the page's path with its query (without page).
func pagerLinks(base url.URL, n, pages int) (prev, next string) {
	link := func(p int) string {
		v := base.Query()
		v.Set("page", strconv.Itoa(p))
		base.RawQuery = v.Encode()
		return base.String()
	}
	if n > 1 {
		prev = link(min(n-1, max(pages, 1)))
	}
	if n < pages {
		next = link(n + 1)
	}
	return prev, next
}

// blocklist shows GET /blocklist with the add forms; ?user= and ?image=
// fill the form that blocks an image (the image page links here).
func (u *UI) blocklist(q *request) error {
	in := q.r.URL.Query()
	v := blocklistView{Page: q.page("Blocklist", "blocklist"),
		Form: blocklistForm{Kind: "image", User: in.Get("user"), Image: in.Get("image"), Distance: "6"}}
	if d := in.Get("deleted"); d != "" {
		v.Page.Notice = "Blocklist entry " + d + " was deleted: what it blocked may be uploaded again."
	}
	return q.renderBlocklist(http.StatusOK, v)
}

// renderBlocklist fills the list from GET /blocklist and writes the page.
func (q *request) renderBlocklist(status int, v blocklistView) error {
	v.CanAdd = q.mayAny("blocklist.post")
	v.PageNo = pageNo(q.r.URL.Query())
	var got api.BlocklistList
	err := q.api.getJSON(q.r.Context(), "/blocklist", url.Values{"page": {itoa(v.PageNo)}, "limit": {itoa(blocklistPageSize)}}, &got)
	if err != nil {
		msg, denied := denial(err)
		if !denied {
			return err
		}
		v.Page.Denied = append(v.Page.Denied, "reading the blocklist ("+msg+")")
		if status == http.StatusOK {
			status = http.StatusForbidden
		}
		return q.render(status, blocklistPage(v))
	}
	v.Hits = got.Search.Hits
	v.Pages = (v.Hits + blocklistPageSize - 1) / blocklistPageSize
	for _, e := range got.Entries {
		v.Entries = append(v.Entries, q.blocklistRowOf(e))
	}
	v.PrevHref, v.NextHref = pagerLinks(url.URL{Path: q.path("/blocklist")}, v.PageNo, v.Pages)
	return q.render(status, blocklistPage(v))
}

// blocklistFormOf reads the add form that was posted.
func blocklistFormOf(r *http.Request) blocklistForm {
	f := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return blocklistForm{Kind: f("kind"), Checksum: f("checksum"), PHash: f("phash"), Distance: f("distance"),
		User: f("user"), Image: f("image"), Reason: f("reason")}
}

// distance reads the form's distance: the API's default when empty.
func (f blocklistForm) distance() (*int, error) {
	if f.Distance == "" {
		return nil, nil
	}
	d, err := strconv.Atoi(f.Distance)
	if err != nil || d < 0 || d > 64 {
		return nil, &apiError{Status: http.StatusBadRequest, Message: "The distance is a whole number of bits from 0 to 64."}
	}
	return &d, nil
}

// addBlocklist adds an entry (checksum or phash), or both entries of an
// image, and goes to the new entry's page, where its matches are.
func (u *UI) addBlocklist(q *request) error {
	f := blocklistFormOf(q.r)
	var ids []int64
	var err error
	switch f.Kind {
	case "checksum":
		ids, err = q.addEntries(f, map[string]any{"checksum": f.Checksum})
	case "phash":
		ids, err = q.addEntries(f, map[string]any{"phash": f.PHash})
	case "image":
		ids, err = q.blockImage(f)
	default:
		return &apiError{Status: http.StatusBadRequest, Message: "Unknown kind of blocklist entry."}
	}
	if err != nil {
		msg, status, err := refusal(err)
		if err != nil {
			return err
		}
		f.Error = msg
		return q.renderBlocklist(status, blocklistView{Page: q.page("Blocklist", "blocklist"), Form: f})
	}
	added := make([]string, len(ids))
	for i, id := range ids {
		added[i] = strconv.FormatInt(id, 10)
	}
	return q.redirect("/blocklist/" + added[len(added)-1] + "?added=" + strings.Join(added, ","))
}

// addEntries posts each body (with the form's reason, and its distance
// for a hash) to POST /blocklist and returns the new entries' ids. A body
// an entry blocks already (409) is passed over while another is added:
// blocking an image whose checksum is blocked still blocks its hash.
func (q *request) addEntries(f blocklistForm, bodies ...map[string]any) ([]int64, error) {
	var ids []int64
	var taken error
	for _, b := range bodies {
		b["reason"] = f.Reason
		if _, ok := b["phash"]; ok {
			d, err := f.distance()
			if err != nil {
				return nil, err
			}
			if d != nil {
				b["distance"] = *d
			}
		}
		body, _ := json.Marshal(b) // never fails
		r, err := q.api.send(q.r.Context(), http.MethodPost, "/blocklist", body, "")
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusConflict {
			taken = err
			continue
		}
		if err != nil {
			return ids, err
		}
		var res api.BlocklistResult
		if err := json.Unmarshal(r.Body, &res); err != nil {
			return ids, err
		}
		ids = append(ids, res.Entry.ID)
	}
	if len(ids) == 0 && taken != nil {
		return nil, taken
	}
	return ids, nil
}

// blockImage blocks an image's checksum and, when it was analysed, its
// perceptual hash, reading both from the user's listing.
func (q *request) blockImage(f blocklistForm) ([]int64, error) {
	if !validName(f.User) || f.Image == "" {
		return nil, &apiError{Status: http.StatusBadRequest, Message: "Name the image by its user and its identifier."}
	}
	l, err := q.list(q.r.Context(), "/users/"+url.PathEscape(f.User)+"/images", url.Values{"ids[]": {f.Image},
		"fields[]": {"imageIdentifier", "checksum", "phash"}})
	if err != nil {
		return nil, err
	}
	if len(l.Images) == 0 {
		return nil, &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf("There is no image %s of %s.", f.Image, f.User)}
	}
	im := l.Images[0]
	bodies := []map[string]any{{"checksum": im.Checksum}}
	if im.PHash != "" {
		bodies = append(bodies, map[string]any{"phash": im.PHash})
	}
	return q.addEntries(f, bodies...)
}

// entryID reads the path's entry id.
func (q *request) entryID() (string, error) {
	id := q.r.PathValue("id")
	if _, err := strconv.ParseInt(id, 10, 64); err != nil {
		return "", &apiError{Status: http.StatusNotFound, Message: "There is no blocklist entry " + id + "."}
	}
	return id, nil
}

// blocklistEntry shows an entry and a page of the stored images it
// matches.
func (u *UI) blocklistEntry(q *request) error {
	id, err := q.entryID()
	if err != nil {
		return err
	}
	in := q.r.URL.Query()
	v := blocklistEntryView{Page: q.page("Blocklist entry "+id, "blocklist"), PageNo: pageNo(in), Back: q.path("/blocklist")}
	var res api.BlocklistResult
	if err := q.api.getJSON(q.r.Context(), "/blocklist/"+id, url.Values{"page": {itoa(v.PageNo)}, "limit": {itoa(matchesPageSize)}}, &res); err != nil {
		return notFoundAs(err, "There is no blocklist entry "+id+".")
	}
	v.Entry = q.blocklistRowOf(res.Entry)
	v.Hits = res.Search.Hits
	v.Pages = (v.Hits + matchesPageSize - 1) / matchesPageSize
	for _, m := range res.Matches {
		v.Matches = append(v.Matches, thumbView{User: m.User, ID: m.ImageIdentifier,
			Alt:     fmt.Sprintf("Image %s of %s, %d×%d %s", shortID(m.ImageIdentifier), m.User, m.Width, m.Height, m.Extension),
			Src:     q.thumbURL(m.User, m.ImageIdentifier),
			Href:    q.path("/users/" + url.PathEscape(m.User) + "/images/" + url.PathEscape(m.ImageIdentifier)),
			Caption: distanceLabel(m.Distance)})
	}
	v.PrevHref, v.NextHref = pagerLinks(url.URL{Path: v.Entry.Href}, v.PageNo, v.Pages)
	v.CanRemove, v.CanDelete = q.mayAny("blocklist.post") && v.Hits > 0, q.mayAny("blocklist.delete")
	v.RemoveHref, v.DeleteHref = v.Entry.Href+"/remove", v.Entry.Href+"/delete"
	switch {
	case in.Get("added") != "":
		v.Page.Notice = "Added: " + addedLabel(in.Get("added")) + ". Uploads it blocks now answer 451; the images below were stored before."
	case in.Get("removed") != "":
		v.Page.Notice = "Deleted " + plural(atoiOr(in.Get("removed")), "matching image", "matching images") + "."
	}
	return q.render(http.StatusOK, blocklistEntryPage(v))
}

// addedLabel names the entries an add made ("entries 4 and 5").
func addedLabel(ids string) string {
	parts := strings.Split(ids, ",")
	if len(parts) == 1 {
		return "blocklist entry " + parts[0]
	}
	return "blocklist entries " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func atoiOr(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// confirmRemoveBlocked asks before the images an entry matches are
// deleted.
func (u *UI) confirmRemoveBlocked(q *request) error {
	id, err := q.entryID()
	if err != nil {
		return err
	}
	var res api.BlocklistResult
	if err := q.api.getJSON(q.r.Context(), "/blocklist/"+id, url.Values{"limit": {"1"}}, &res); err != nil {
		return notFoundAs(err, "There is no blocklist entry "+id+".")
	}
	base := "/blocklist/" + id
	n := res.Search.Hits
	msg := "The " + plural(n, "stored image", "stored images") + " of every user that this entry matches will be deleted, " +
		"each with its metadata, short URLs and cached variants, as deleting it on its own page does. This cannot be undone."
	if n == 0 {
		msg = "This entry matches no stored image now: there is nothing to delete."
	} else if n > 1000 {
		msg += " One removal deletes 1000; run it again for the rest."
	}
	v := actionConfirmView{Page: q.page("Delete the images blocklist entry "+id+" matches?", "blocklist"), Message: msg,
		Action: q.path(base + "/remove"), Button: "Delete " + plural(min(n, 1000), "image", "images"), Cancel: q.path(base), Danger: true}
	return q.render(http.StatusOK, actionConfirmPage(v))
}

func (u *UI) removeBlocked(q *request) error {
	id, err := q.entryID()
	if err != nil {
		return err
	}
	r, err := q.api.send(q.r.Context(), http.MethodPost, "/blocklist/"+id+"/remove", nil, "")
	if err != nil {
		return err
	}
	var res api.BlocklistResult
	if err := json.Unmarshal(r.Body, &res); err != nil {
		return err
	}
	return q.redirect("/blocklist/" + id + "?removed=" + itoa(len(res.Removed)))
}

// confirmDeleteBlocklist asks before an entry is deleted.
func (u *UI) confirmDeleteBlocklist(q *request) error {
	id, err := q.entryID()
	if err != nil {
		return err
	}
	var res api.BlocklistResult
	if err := q.api.getJSON(q.r.Context(), "/blocklist/"+id, url.Values{"limit": {"1"}}, &res); err != nil {
		return notFoundAs(err, "There is no blocklist entry "+id+".")
	}
	row := q.blocklistRowOf(res.Entry)
	base := "/blocklist/" + id
	v := actionConfirmView{Page: q.page("Delete blocklist entry "+id+"?", "blocklist"),
		Message: "Uploads of the " + strings.ToLower(row.Kind) + " " + row.Value + " " + row.Within +
			" are accepted again. Images deleted through the entry stay deleted.",
		Action: q.path(base + "/delete"), Button: "Delete entry", Cancel: q.path(base), Danger: true}
	return q.render(http.StatusOK, actionConfirmPage(v))
}

func (u *UI) deleteBlocklist(q *request) error {
	id, err := q.entryID()
	if err != nil {
		return err
	}
	if _, err := q.api.send(q.r.Context(), http.MethodDelete, "/blocklist/"+id, nil, ""); err != nil {
		return err
	}
	return q.redirect("/blocklist?deleted=" + url.QueryEscape(id))
}
