package vitrine

import (
	"encoding/json"
	"fmt"
)

// Metadata decodes the metadata of the call's image (the image being
// transformed, or the event's image) into v, as json.Unmarshal does (use a
// *json.RawMessage to get the JSON itself). On metadata.put and metadata.post
// it is the document the client sent. It fails with ErrNotFound where there is
// no image.
func Metadata(v any) error {
	return readJSON("metadata_get", hostMetadataGet, v)
}

// SetMetadata sets metadata from v, which must encode to a JSON object. On
// images.post it becomes the new image's metadata (merged over what other
// listeners set); on metadata.put and metadata.post it replaces the document
// the client sent. Elsewhere it fails with ErrUnavailable.
func SetMetadata(v any) error {
	doc, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("vitrine: metadata_set: %v: %w", err, ErrInvalid)
	}
	return status("metadata_set", hostMetadataSet(doc))
}

// readJSON reads a JSON value through the host function fn and decodes it
// into v.
func readJSON(fn string, read func([]byte) int32, v any) error {
	data, err := readValue(fn, 1024, read)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("vitrine: %s: decode: %v: %w", fn, err, ErrInvalid)
	}
	return nil
}
