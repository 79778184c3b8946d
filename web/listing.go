package web

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/vitrine/vitrine/api"
)

// imageEntry is one image as the API lists it: the api's own type, by a
// short name the pages use.
type imageEntry = api.ImageEntry

// thumbView is an image tile: a signed thumbnail and where it links.
type thumbView struct {
	User, ID, Alt, Src, Href, Caption string
	// Color (#rrggbb) fills the tile while the thumbnail loads; BlurHash
	// is drawn over it by app.js, at the original's aspect Ratio
	// (width/height).
	Color, BlurHash, Ratio string
}

// thumbSize is the side of a grid thumbnail in CSS pixels; twice that is
// fetched for sharp tiles on high-density screens.
const thumbSize = 180

// list asks the API for images: path is /images or /users/<u>/images.
func (q *request) list(ctx context.Context, path string, params url.Values) (api.Listing, error) {
	var l api.Listing
	err := q.api.getJSON(ctx, path, params, &l)
	return l, err
}

// thumbs turns listed images into grid tiles.
func (q *request) thumbs(imgs []imageEntry) []thumbView {
	out := make([]thumbView, len(imgs))
	for i, im := range imgs {
		out[i] = thumbView{User: im.User, ID: im.ID,
			Alt:     fmt.Sprintf("Image %s of %s, %d×%d %s", shortID(im.ID), im.User, im.Width, im.Height, im.Extension),
			Src:     q.thumbURL(im.User, im.ID),
			Href:    q.path("/users/" + url.PathEscape(im.User) + "/images/" + url.PathEscape(im.ID)),
			Caption: fmt.Sprintf("%d×%d · %s", im.Width, im.Height, humanBytes(im.Size)),
			Color:   hexColor(im.AverageColor), BlurHash: blurHash(im.BlurHash),
		}
		if im.Width > 0 && im.Height > 0 {
			out[i].Ratio = strconv.FormatFloat(float64(im.Width)/float64(im.Height), 'f', 3, 64)
		}
	}
	return out
}

// thumbURL is a signed URL of an image's square thumbnail.
func (q *request) thumbURL(user, id string) string {
	t := fmt.Sprintf("thumbnail:width=%d,height=%d,fit=outbound", 2*thumbSize, 2*thumbSize)
	return q.api.signedURL("/users/"+url.PathEscape(user)+"/images/"+url.PathEscape(id)+".webp", url.Values{"t[]": {t}})
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func itoa(n int) string { return strconv.Itoa(n) }
