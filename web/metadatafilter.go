package web

import (
	"fmt"
	"net/url"
	"strings"
)

// addMetadataFilter turns the grid's Metadata field, key=value entries one
// per line or separated by commas, into the API's metadata[<key>]=<value>
// parameters. Only the shape is checked here; the API validates keys and
// values and its message is shown next to the field.
func addMetadataFilter(params url.Values, field string) error {
	for _, entry := range strings.FieldsFunc(field, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, value, ok := strings.Cut(entry, "=")
		if !ok {
			//lint:ignore ST1005 the page shows this message as it is, a sentence
			return fmt.Errorf("Metadata filter %q must be key=value", entry)
		}
		params.Add("metadata["+strings.TrimSpace(key)+"]", strings.TrimSpace(value))
	}
	return nil
}

// isMetadataFilterError reports whether an API listing error is about the
// metadata[<key>]=<value> parameters, so that it belongs next to the field.
func isMetadataFilterError(msg string) bool {
	return strings.HasPrefix(msg, "Invalid metadata filter") || strings.HasPrefix(msg, "Too many metadata filters")
}
