package cdn

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// DefaultPrefix starts every tag when Tags.Prefix is empty.
const DefaultPrefix = "vitrine-"

// Separators a tag header may use between its tags (Tags.Headers).
const (
	Space = "space"
	Comma = "comma"
)

// DefaultHeaders are the tag headers sent when Tags.Headers is nil:
// Fastly's Surrogate-Key (space separated), Cloudflare's Cache-Tag (comma
// separated) and the xkey header Varnish's xkey vmod reads (space
// separated).
func DefaultHeaders() map[string]string {
	return map[string]string{"Surrogate-Key": Space, "Cache-Tag": Comma, "xkey": Space}
}

// Tags names the cache tags of vitrine's responses and the headers that
// carry them. Its zero value is the defaults.
//
// A tag is the prefix, a kind and the names it is about, such as
// `vitrine-image:alice/0a1b…`: only letters, digits and `_ . - : / %`,
// never a space or a comma, so that Fastly's surrogate keys, Cloudflare's
// cache tags and Varnish's xkey all take it as one tag. A name holding any
// other byte has it written as %XX (user names, image identifiers and
// public keys never do). Cloudflare compares tags case-insensitively: a
// purge of alice's tags also purges Alice's there.
type Tags struct {
	// Prefix starts every tag (default DefaultPrefix): 1 to 64 letters,
	// digits, `_`, `.`, `-` or `:`. Several vitrine services behind one CDN
	// account keep their tags apart with prefixes of their own.
	Prefix string `yaml:"tagPrefix"`
	// Headers maps each response header that carries the tags to the
	// separator written between them, Space or Comma (default
	// DefaultHeaders). An empty, non-nil map sends no tags.
	Headers map[string]string `yaml:"tagHeaders"`
}

// maxPrefix bounds Tags.Prefix, so that a tag stays far below the 1024
// bytes Fastly allows a surrogate key.
const maxPrefix = 64

// Validate reports a prefix or a header that breaks the rules above.
func (t Tags) Validate() error {
	var errs []error
	if len(t.Prefix) > maxPrefix || strings.Trim(t.Prefix, prefixChars) != "" {
		errs = append(errs, fmt.Errorf("cdn.tagPrefix %q: want at most %d letters, digits, '_', '.', '-' or ':'", t.Prefix, maxPrefix))
	}
	for _, name := range slices.Sorted(maps.Keys(t.Headers)) {
		if name == "" || strings.Trim(name, tokenChars) != "" {
			errs = append(errs, fmt.Errorf("cdn.tagHeaders: %q is not a header name", name))
		}
		if sep := t.Headers[name]; sep != Space && sep != Comma {
			errs = append(errs, fmt.Errorf("cdn.tagHeaders: %s: separator %q: want %s or %s", name, sep, Space, Comma))
		}
	}
	return errors.Join(errs...)
}

const (
	alnum       = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	prefixChars = alnum + "_.-:"
	// nameChars are the bytes a name keeps in a tag; the others are
	// written %XX.
	nameChars = alnum + "_.-"
	// tokenChars are those of an HTTP header name (RFC 9110's token).
	tokenChars = alnum + "!#$%&'*+-.^_`|~"
)

func (t Tags) prefix() string {
	if t.Prefix == "" {
		return DefaultPrefix
	}
	return t.Prefix
}

// All is the tag every tagged response carries: purging it empties the
// cache of everything vitrine served.
func (t Tags) All() string { return t.prefix() + "all" }

// User is the tag of everything about one user: its images, their
// metadata and short URLs, its listings.
func (t Tags) User(user string) string { return t.prefix() + "user:" + escape(user) }

// Image is the tag of one image's responses: the image in every
// transformation and format, its metadata, its short URLs.
func (t Tags) Image(user, image string) string {
	return t.prefix() + "image:" + escape(user) + "/" + escape(image)
}

// Listing is the tag of a user's listings: GET /users/<user> and
// /users/<user>/images, and GET /images naming the user in users[].
func (t Tags) Listing(user string) string { return t.prefix() + "images:" + escape(user) }

// Listings is the tag of the listings across users that name none
// (GET /images without users[]): any user's change may change them.
func (t Tags) Listings() string { return t.prefix() + "images" }

// Key is the tag of the responses read with a public key: every read but
// a short URL's is signed by a key (its access token is in the URL), so
// these are what a change of the key or its rules may make unreachable.
func (t Tags) Key(publicKey string) string { return t.prefix() + "key:" + escape(publicKey) }

// escape writes the bytes of name outside nameChars as %XX.
func escape(name string) string {
	if strings.Trim(name, nameChars) == "" {
		return name
	}
	var b strings.Builder
	for i := range len(name) {
		if c := name[i]; strings.IndexByte(nameChars, c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Set writes tags into h, in every configured header.
func (t Tags) Set(h http.Header, tags []string) {
	if len(tags) == 0 {
		return
	}
	headers := t.Headers
	if headers == nil {
		headers = DefaultHeaders()
	}
	for name, sep := range headers {
		join := " "
		if sep == Comma {
			join = ","
		}
		h.Set(name, strings.Join(tags, join))
	}
}

// Sent reports whether Set writes any header.
func (t Tags) Sent() bool { return t.Headers == nil || len(t.Headers) > 0 }
