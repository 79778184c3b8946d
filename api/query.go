package api

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// phpArray reads a PHP-style array parameter: `name[]=a&name[]=b` or
// `name[0]=a&name[1]=b` (in index order). present reports whether any form
// was given; scalar reports a plain `name=...` (not an array); nested
// reports `name[][]` or `name[x][y]` forms.
func phpArray(q url.Values, name string) (vals []string, present, scalar, nested bool) {
	type iv struct {
		i int
		v string
	}
	var indexed []iv
	for k, vs := range q {
		switch {
		case k == name:
			present, scalar = true, true
		case k == name+"[]":
			present = true
			vals = append(vals, vs...)
		case strings.HasPrefix(k, name+"["):
			present = true
			inner := strings.TrimPrefix(k, name+"[")
			idx, rest, ok := strings.Cut(inner, "]")
			if !ok || rest != "" {
				nested = true
				continue
			}
			n, err := strconv.Atoi(idx)
			if err != nil {
				n = 1 << 30 // associative keys sort after numeric ones
			}
			for _, v := range vs {
				indexed = append(indexed, iv{n, v})
			}
		}
	}
	sort.SliceStable(indexed, func(i, j int) bool { return indexed[i].i < indexed[j].i })
	for _, e := range indexed {
		vals = append(vals, e.v)
	}
	return vals, present, scalar, nested
}

// transformations reads `t[]`, with Imbo's messages for a `t`
// that is not an array of strings.
func transformations(q url.Values) ([]string, error) {
	vals, present, scalar, nested := phpArray(q, "t")
	if !present {
		return nil, nil
	}
	if scalar {
		// Imbo's phrase, its spelling included, comes first: clients match on it.
		return nil, errorf(http.StatusBadRequest, "Transformations must be specifed as an array: write t[]=%s, one t[] for each step",
			q.Get("t"))
	}
	if nested {
		return nil, errorf(http.StatusBadRequest, "Invalid transformation")
	}
	for _, v := range vals {
		if v == "" {
			return nil, errorf(http.StatusBadRequest, "Invalid transformation: empty name")
		}
	}
	return vals, nil
}

// autoQuality applies the quality parameter: quality=auto (the configured
// target) or quality=<level> has engine add its auto-quality step to the
// chain (engine.WithAutoQuality), unless the chain has a compress step of
// its own (an explicit level wins).
func autoQuality(q url.Values, specs []string) ([]string, error) {
	v := q.Get("quality")
	if v == "" {
		return specs, nil
	}
	target := v
	if v == "auto" {
		target = ""
	}
	out, err := engine.WithAutoQuality(specs, target)
	if err != nil { // an unknown target, its only error
		return nil, errorf(http.StatusBadRequest, "Invalid value for quality: %q (auto, %s)", v, strings.Join(engine.QualityLevels, ", "))
	}
	return out, nil
}

// listParam reads an array parameter of a listing, accepting a plain value too.
func listParam(q url.Values, name string) []string {
	vals, _, scalar, _ := phpArray(q, name)
	if scalar {
		vals = append(vals, q[name]...)
	}
	return vals
}

// pageParams reads page (default 1) and limit (default 20, 1 to 1000).
func pageParams(c *call) (page, limit int, err error) {
	page, limit = 1, 20
	if v := c.query.Get("page"); v != "" {
		if page, err = strconv.Atoi(v); err != nil || page < 1 {
			return 0, 0, errorf(http.StatusBadRequest, "page must be a positive integer")
		}
	}
	if v := c.query.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 1000 {
			return 0, 0, errorf(http.StatusBadRequest, "limit must be between 1 and 1000")
		}
	}
	return page, limit, nil
}

var sortFields = map[string]string{
	"size": "size", "user": "user", "imageIdentifier": "imageIdentifier", "extension": "extension",
	"mime": "mime", "mimeType": "mime", "added": "added", "updated": "updated", "width": "width",
	"height": "height", "checksum": "checksum", "originalChecksum": "originalChecksum",
}

// listQuery reads the parameters of an image listing (api/README.md, The API;
// api/openapi.yaml).
func listQuery(c *call) (storage.Query, []string, error) {
	var q storage.Query
	var err error
	if q.Page, q.Limit, err = pageParams(c); err != nil {
		return q, nil, err
	}
	switch c.query.Get("metadata") {
	case "", "0", "false":
	case "1", "true":
		q.WithMetadata = true
	default:
		return q, nil, errorf(http.StatusBadRequest, "metadata must be 0 or 1")
	}
	for _, b := range []struct {
		name string
		dst  *time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		if v := c.query.Get(b.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return q, nil, errorf(http.StatusBadRequest, "%s must be a Unix timestamp", b.name)
			}
			if n > 0 {
				*b.dst = time.Unix(n, 0).UTC()
			}
		}
	}
	for _, entry := range listParam(c.query, "sort") {
		field, dir, hasDir := strings.Cut(strings.TrimSpace(entry), ":")
		if field == "" {
			return q, nil, errorf(http.StatusBadRequest, "Badly formatted sort")
		}
		col, ok := sortFields[field]
		if !ok {
			return q, nil, errorf(http.StatusBadRequest, "Invalid sort field: %s", field)
		}
		if hasDir && dir != "asc" && dir != "desc" {
			return q, nil, errorf(http.StatusBadRequest, "Invalid sort value: %s", entry)
		}
		q.Sort = append(q.Sort, storage.SortKey{Field: col, Desc: dir == "desc"})
	}
	q.IDs = listParam(c.query, "ids")
	q.Checksums = listParam(c.query, "checksums")
	q.OriginalChecksums = listParam(c.query, "originalChecksums")
	if q.Metadata, err = metadataMatches(c.query); err != nil {
		return q, nil, err
	}
	fields := listParam(c.query, "fields")
	for _, f := range fields {
		if f != "" && !slices.Contains(imageFields, f) {
			return q, nil, errorf(http.StatusBadRequest, "Unknown field '%s' in fields[]; the fields are %s",
				f, strings.Join(imageFields, ", "))
		}
	}
	return q, fields, nil
}
