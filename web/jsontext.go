package web

import (
	"bytes"
	"encoding/json"
	"strings"
)

// prettyJSON indents a JSON document for a person to read and edit.
// Why not json.Indent: the API's encoder writes &, < and > as \u0026,
// \u003c and \u003e, which would show in the editor as such; the page's
// own escaping already keeps the text safe in HTML.
func prettyJSON(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers keep the digits they were written with
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return "", err
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
