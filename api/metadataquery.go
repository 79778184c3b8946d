package api

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/vitrine/vitrine/storage"
)

// Limits of the metadata[<key>]=<value> listing filter, a vitrine extension.
const (
	maxMetadataMatches   = 10
	maxMetadataKeyLen    = 255
	maxMetadataValueLen  = 1024
	metadataFilterPrefix = "metadata["
)

// metadataMatches reads the vitrine extension `metadata[<key>]=<value>` of
// the listings: every pair must hold (AND). The plain `metadata` parameter
// (include metadata or not) is a different key and is not read here.
func metadataMatches(q url.Values) ([]storage.MetadataMatch, error) {
	var out []storage.MetadataMatch
	for name, vals := range q {
		if !strings.HasPrefix(name, metadataFilterPrefix) {
			continue
		}
		key, ok := strings.CutSuffix(strings.TrimPrefix(name, metadataFilterPrefix), "]")
		switch {
		case !ok || strings.ContainsAny(key, "[]"):
			return nil, errorf(http.StatusBadRequest, "Invalid metadata filter %s: use metadata[<key>]=<value>", name)
		case key == "":
			return nil, errorf(http.StatusBadRequest, "Invalid metadata filter metadata[]: the key must not be empty")
		case len(key) > maxMetadataKeyLen || !utf8.ValidString(key):
			return nil, errorf(http.StatusBadRequest, "Invalid metadata filter %s: the key must be valid UTF-8 of at most %d bytes", name, maxMetadataKeyLen)
		}
		for _, v := range vals {
			if len(v) > maxMetadataValueLen || !utf8.ValidString(v) {
				return nil, errorf(http.StatusBadRequest, "Invalid metadata filter %s: the value must be valid UTF-8 of at most %d bytes", name, maxMetadataValueLen)
			}
			out = append(out, storage.MetadataMatch{Key: key, Value: v})
		}
	}
	if len(out) > maxMetadataMatches {
		return nil, errorf(http.StatusBadRequest, "Too many metadata filters: at most %d metadata[<key>]=<value> pairs", maxMetadataMatches)
	}
	// Why sorted: the map order of q would make the SQL differ per request.
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Value < out[j].Value
	})
	return out, nil
}
