package web

import "net/url"

// search is one results grid across every user the key may read, by
// users, identifiers, checksums, original checksums and metadata, all
// done by the API's cross-user listing (GET /images); the ticked images
// take bulk actions.
func (u *UI) search(q *request) error {
	v := q.listingView("Search images", "/search")
	v.Search, v.Page.Active = true, "search"
	q.takeBulkResult(&v)
	extra := url.Values{}
	for _, name := range listFields(v.Users) {
		extra.Add("users[]", name)
	}
	status, err := q.runListing(&v, "/images", extra)
	if err != nil {
		return err
	}
	q.offerBulk(&v, "")
	return q.render(status, searchPage(v))
}

// offerBulk says which bulk actions the grid offers: downloading always
// (the key read the listing), deleting and metadata when the key's rules
// grant them on user (on some user for a search).
func (q *request) offerBulk(v *imagesView, user string) {
	v.Bulk = len(v.Thumbs) > 0
	v.CanBulkDelete, v.CanBulkMetadata = q.may("image.delete", user), q.may("metadata.post", user)
}
