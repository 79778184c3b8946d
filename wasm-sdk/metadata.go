package vitrine

import (
	"encoding/json"
	"fmt"
)

// Metadata decodes the metadata of the call's image (the image being
// transformed, or the event's image) into v, as json.Unmarshal does (use a
// *json.RawMessage to get the JSON itself); an image without metadata gives
// {}. On images.post it is what the new image will get so far, on
// metadata.put and metadata.post the document the client sent. In a listener
// it fails with ErrNotFound where the event has no image.
func Metadata(v any) error {
	return readJSON("metadata_get", hostMetadataGet, v)
}

// SetMetadata sets metadata from v, which must encode to a JSON object. On
// images.post its top-level keys are merged over the new image's metadata so
// far (what other listeners and earlier calls set); on metadata.put and
// metadata.post it replaces the document the client sent, which the server
// then stores (PUT) or merges into the stored metadata (POST). Elsewhere it
// fails with ErrUnavailable.
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
