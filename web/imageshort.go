package web

import (
	"context"
	"net/url"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// loadShortURLs fills the image page's list of the image's short URLs, or
// says why the key may not see it.
func (q *request) loadShortURLs(ctx context.Context, v *imageView) error {
	var got api.ShortURLList
	if err := q.api.getJSON(ctx, q.imagePath(v.User, v.ID)+"/shorturls", nil, &got); err != nil {
		msg, denied := denial(err)
		if !denied {
			return err
		}
		v.ShortListNote = "Your key may not list this image's short URLs: " + msg
		return nil
	}
	v.ShortURLs = make([]shortURLView, 0, len(got.ShortURLs))
	for _, s := range got.ShortURLs {
		sv := shortURLView{ID: s.ID, URL: q.api.base + "/s/" + s.ID, Extension: "none (content negotiation)"}
		if s.Extension != nil {
			sv.Extension = *s.Extension
		}
		sv.Query = shortQuery(s.Query.T)
		v.ShortURLs = append(v.ShortURLs, sv)
	}
	return nil
}

// shortQuery writes transformations as the query a short URL applies.
func shortQuery(ts []string) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = "t[]=" + t
	}
	return strings.Join(parts, "&")
}

// shortURLDeleted is the address of the image page after short URL id was
// deleted.
func (q *request) shortURLDeleted(user, image, id string) string {
	return q.imagePath(user, image) + "?" + url.Values{"done": {"shorturl-deleted"}, "id": {id}}.Encode() + "#su-h"
}
