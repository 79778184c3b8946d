package api

import (
	"net/http"
	"slices"
)

// maxListingUsers is how many users of GET /images' users[] get a tag of
// their own; a listing naming more carries the tag of the listings across
// users instead, so that its headers stay far below what a CDN reads
// (16 KB for Cloudflare's Cache-Tag).
const maxListingUsers = 16

// cacheTags returns the CDN tags of a read of c (api/cdn/README.md, "CDN"): every
// tagged answer carries the tag of all answers; an image's answers (the
// image in any transformation, its metadata, short URLs and variants, and
// GET /s/<id>) its user's and its own; a user's listings the user's and
// its listing's; GET /images the tags of the users it names, or that of
// the listings across users; and every signed read the tag of the key it
// was read with. Other routes carry none.
func (c *call) cacheTags() []string {
	t := c.s.cfg.CDN
	user, image := c.params["user"], c.params["image"]
	tags := []string{t.All()}
	switch c.route.name {
	case "image", "metadata", "shorturls", "shorturl", "variants", "globalshorturl":
		if user == "" || image == "" {
			return nil
		}
		tags = append(tags, t.User(user), t.Image(user, image))
	case "user", "images":
		tags = append(tags, t.User(user), t.Listing(user))
	case "globalimages":
		users := listParam(c.query, "users")
		slices.Sort(users)
		users = slices.Compact(users)
		if len(users) == 0 || len(users) > maxListingUsers {
			tags = append(tags, t.Listings())
			break
		}
		for _, u := range users {
			tags = append(tags, t.User(u), t.Listing(u))
		}
	default:
		return nil
	}
	if !c.route.public() && c.publicKey != "" {
		tags = append(tags, t.Key(c.publicKey))
	}
	return tags
}

// setCacheTags writes c's tags in the configured headers (cdn.tagHeaders)
// on a read's answer.
func (c *call) setCacheTags() {
	if c.route == nil || !c.s.cfg.CDN.Sent() || (c.method != http.MethodGet && c.method != http.MethodHead) {
		return
	}
	c.s.cfg.CDN.Set(c.w.Header(), c.cacheTags())
}
