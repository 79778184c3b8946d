package filters

import (
	"context"
	"slices"

	"github.com/vitrine/vitrine/engine/schema"
)

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
	// SetStat sets `custom.<filter>.<name>` of a stats.get response, beside
	// the filter's stats_add counters (replacing one of the same name in
	// this response). The host passes the name of the filter that made the
	// call, so a filter only ever writes under its own name.
	SetStat(filter, name string, value any)
}

// Events whose data a listener may change (ABI.md section 5).
const (
	eventUpload       = "images.post"
	eventStats        = "stats.get"
	eventMetadataPut  = "metadata.put"
	eventMetadataPost = "metadata.post"
)

// eventNames are the events the host fires, `<resource>.<method>`, sorted
// (ABI.md section 5, "Events"): one for each route of the REST API and each
// method it serves there, HEAD wherever GET is served. OPTIONS and other
// methods fire none. A test in package main compares this list with the
// events package api fires, so the two cannot drift.
var eventNames = []string{
	"accessrule.delete", "accessrule.get", "accessrule.head",
	"accessrules.get", "accessrules.head", "accessrules.post",
	"audit.get", "audit.head",
	"blocklist.delete", "blocklist.get", "blocklist.head", "blocklist.post",
	"filters.delete", "filters.get", "filters.head", "filters.patch", "filters.post", "filters.put",
	"globalimages.get", "globalimages.head",
	"globalshorturl.get", "globalshorturl.head",
	"group.delete", "group.get", "group.head", "group.put",
	"groups.get", "groups.head",
	"image.delete", "image.get", "image.head",
	"images.get", "images.head", "images.post",
	"index.get", "index.head",
	"keys.delete", "keys.get", "keys.head", "keys.put",
	"metadata.delete", "metadata.get", "metadata.head", "metadata.post", "metadata.put",
	"quota.get", "quota.head", "quota.put",
	"shorturl.delete", "shorturl.get", "shorturl.head",
	"shorturls.delete", "shorturls.get", "shorturls.head", "shorturls.post",
	"stats.get", "stats.head",
	"status.get", "status.head",
	"transformations.get", "transformations.head",
	"uploads.delete", "uploads.head", "uploads.patch", "uploads.post",
	"uploadtoken.delete", "uploadtokens.post",
	"usage.get", "usage.head",
	"user.delete", "user.get", "user.head",
	"variants.get", "variants.head",
	"webhook.delete", "webhook.get", "webhook.head", "webhook.put",
	"webhookdeliveries.get", "webhookdeliveries.head",
	"webhookdelivery.get", "webhookdelivery.head", "webhookdelivery.post",
	"webhookping.post",
	"webhooks.get", "webhooks.head", "webhooks.post",
}

// EventNames returns the name of every event the host fires, sorted.
func EventNames() []string { return slices.Clone(eventNames) }

// knownEvent reports whether the pattern p (a name, `resource.*`,
// `*.method` or `*`) selects at least one event the host fires, matched as
// the service's event bus matches it (schema.MatchEvent): a listener
// subscribed to nothing is a typo, not a choice.
func knownEvent(p string) bool {
	return slices.ContainsFunc(eventNames, func(name string) bool { return schema.MatchEvent(p, name) })
}
