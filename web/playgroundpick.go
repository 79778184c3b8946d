package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// presetView is one configured preset (transformationPresets) as GET
// /transformations lists it.
type presetView = api.Preset

// maxPickImages bounds the playground's image picker: the user's newest.
const maxPickImages = 100

// pickImages lists the user's newest images for the picker, keeping the
// chosen one in the list; with none chosen (or one the user does not
// have), the newest is chosen.
func (q *request) pickImages(ctx context.Context, v *playgroundView, c *chain) {
	if c.user == "" {
		return
	}
	l, err := q.list(ctx, "/users/"+url.PathEscape(c.user)+"/images", url.Values{"limit": {strconv.Itoa(maxPickImages)},
		"sort[]": {"added:desc"}})
	if err != nil || len(l.Images) == 0 {
		return
	}
	found := false
	for _, im := range l.Images {
		label := shortID(im.ID) + " · " + itoa(im.Width) + "×" + itoa(im.Height) + " " + im.Extension + " · " + humanBytes(im.Size)
		v.Images = append(v.Images, option{Value: im.ID, Label: label})
		found = found || im.ID == c.image
	}
	if found || c.image == "" {
		if c.image == "" {
			c.image = l.Images[0].ID
		}
		return
	}
	if one, err := q.list(ctx, "/users/"+url.PathEscape(c.user)+"/images", url.Values{"ids[]": {c.image}}); err == nil && len(one.Images) == 1 {
		v.Images = append(v.Images, option{Value: c.image, Label: shortID(c.image) + " (older)"})
		return
	}
	c.image = l.Images[0].ID
}

// usePreset replaces the chain's steps with the named preset's, each
// step's parameters as the preset gives them; an unknown preset changes
// nothing.
func (c *chain) usePreset(presets []presetView, name string) {
	for _, p := range presets {
		if p.Name != name {
			continue
		}
		c.steps = c.steps[:0]
		for _, spec := range p.Transformations {
			n, params, _ := strings.Cut(spec, ":")
			st := chainStep{name: n, params: map[string]string{}}
			for _, kv := range strings.Split(params, ",") {
				if k, val, ok := strings.Cut(kv, "="); ok {
					st.params[k] = val
				}
			}
			c.steps = append(c.steps, st)
		}
		return
	}
}

// outputSize describes the transformed image as the API answered it: its
// bytes (Content-Length) and pixels (<prefix>-OutputWidth and -Height, or
// the original's when the API served the stored bytes unchanged).
func outputSize(h http.Header) string {
	var w, ht, ow, oh string
	for k, v := range h {
		switch {
		case strings.HasSuffix(k, "-Outputwidth"):
			w = v[0]
		case strings.HasSuffix(k, "-Outputheight"):
			ht = v[0]
		case strings.HasSuffix(k, "-Originalwidth"):
			ow = v[0]
		case strings.HasSuffix(k, "-Originalheight"):
			oh = v[0]
		}
	}
	if w == "" && h.Get("Content-Length") == h.Get(headerSuffix(h, "-Originalfilesize")) {
		w, ht = ow, oh
	}
	n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
	if err != nil {
		return ""
	}
	out := humanBytes(n) + " (" + strconv.FormatInt(n, 10) + " bytes)"
	if w != "" && ht != "" {
		out += " · " + w + " × " + ht + " px"
	}
	return out
}

// headerSuffix is the name of the header ending in suffix, "" if none.
func headerSuffix(h http.Header, suffix string) string {
	for k := range h {
		if strings.HasSuffix(k, suffix) {
			return k
		}
	}
	return ""
}

// presetChain is a preset's chain as t[] values joined by " → ".
func presetChain(p presetView) string { return strings.Join(p.Transformations, " → ") }
