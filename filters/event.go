package filters

import "context"

// Event is the event a listener call works on, as the service gives it. It
// is defined here, by its consumer, with plain types only; api's event
// satisfies it. Changes (body, metadata, stats) are applied only when the
// listener's call succeeds, so that a failed optional listener leaves the
// request as if it had not run. The ABI's rules about which event allows what (body only in
// images.post, stats only in stats.get...) are applied by the host before
// these methods are called.
type Event interface {
	// EventName is `<resource>.<method>`: images.post, image.get...
	EventName() string
	// User is the `<user>` of the path, "" on routes without one.
	User() string
	// PublicKey is the public key the request acts with.
	PublicKey() string
	// ImageIdentifier is the `<image>` of the path, "" on routes without one.
	ImageIdentifier() string
	// ImageInfo describes the upload (images.post) or the stored image
	// (image.get) with the keys width, height, mime and size; nil elsewhere.
	ImageInfo(ctx context.Context) (map[string]any, error)
	// Body returns the bytes of an upload (images.post).
	Body(ctx context.Context) ([]byte, error)
	// CheckBody checks replacement bytes for an upload as any upload is
	// checked (type, size, dimensions). An error with HTTPStatus 413 means
	// "too large".
	CheckBody(ctx context.Context, b []byte) error
	// MaxBodyBytes is the largest body CheckBody accepts; the host refuses
	// a longer one before copying it out of the guest.
	MaxBodyBytes() int64
	// SetBody replaces the bytes of an upload with checked bytes.
	SetBody(b []byte)
	// Metadata returns the image's metadata (in images.post: what earlier
	// listeners set), or in metadata.put and metadata.post the document the
	// client sent; nil (and no error) when the request has no image.
	Metadata(ctx context.Context) (map[string]any, error)
	// CheckMetadata checks a metadata document against the service's
	// limits. An error with HTTPStatus 413 means "too large".
	CheckMetadata(md map[string]any) error
	// SetMetadata merges a checked document into the metadata an upload is
	// stored with, or replaces the document of metadata.put and
	// metadata.post.
	SetMetadata(md map[string]any)
	// SetStat sets `custom.<name>` of a stats.get response.
	SetStat(name string, value any)
}

// Events whose data a listener may change (ABI.md section 5).
const (
	eventUpload       = "images.post"
	eventStats        = "stats.get"
	eventMetadataPut  = "metadata.put"
	eventMetadataPost = "metadata.post"
)
