package api

import (
	"context"
	"io"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// The API's view of persistence: small interfaces, each named for what a
// resource needs. *storage.DB and *storage.Blobs satisfy them; Deps wires
// them in.

// imageStore reads and writes image records.
type imageStore interface {
	Image(ctx context.Context, user, id string) (storage.Image, error)
	Reserve(ctx context.Context, key string) (storage.Reservation, error)
	Release(ctx context.Context, res storage.Reservation) error
	CommitImage(ctx context.Context, img *storage.Image, res storage.Reservation, variations bool) (created bool, err error)
	DeleteImage(ctx context.Context, user, id string) error
}

// listingStore answers listings and their Last-Modified.
type listingStore interface {
	Images(ctx context.Context, q storage.Query) (storage.Page, error)
	LastModified(ctx context.Context, users []string) (time.Time, error)
	Users(ctx context.Context) ([]string, error)
}

// metadataStore keeps image metadata.
type metadataStore interface {
	Metadata(ctx context.Context, user, id string) (map[string]any, error)
	SetMetadata(ctx context.Context, user, id string, md map[string]any) error
	// UpdateMetadata replaces the metadata with what change returns for
	// the current document, with no other change in between.
	UpdateMetadata(ctx context.Context, user, id string, change func(cur map[string]any) (map[string]any, error)) error
	MergeMetadata(ctx context.Context, user, id string, md map[string]any) (map[string]any, error)
	DeleteMetadata(ctx context.Context, user, id string) error
}

// shortURLStore keeps short URLs.
type shortURLStore interface {
	InsertShortURL(ctx context.Context, u storage.ShortURL) error
	ShortURL(ctx context.Context, id string) (storage.ShortURL, error)
	FindShortURL(ctx context.Context, user, image, ext, query string) (storage.ShortURL, error)
	ShortURLsOf(ctx context.Context, user, image string) ([]storage.ShortURL, error)
	DeleteShortURL(ctx context.Context, user, image, id string) error
	DeleteShortURLs(ctx context.Context, user, image string) error
}

// statsStore counts images per user.
type statsStore interface {
	UserStats(ctx context.Context) ([]storage.UserStats, error)
}

// pinger reports a backend's health for /status.
type pinger interface {
	Ping(ctx context.Context) error
}

// aclReader is what access control reads on every request.
type aclReader interface {
	Key(ctx context.Context, publicKey string) (storage.Key, error)
	Rules(ctx context.Context, publicKey string) ([]storage.Rule, error)
	Group(ctx context.Context, name string) (storage.Group, error)
}

// keyWriter changes key pairs.
type keyWriter interface {
	PutKey(ctx context.Context, k storage.Key) (created bool, err error)
	CreateKey(ctx context.Context, k storage.Key, rules []storage.Rule) ([]storage.Rule, error)
	DeleteKey(ctx context.Context, publicKey string) error
}

// ruleWriter changes access rules.
type ruleWriter interface {
	AddRules(ctx context.Context, publicKey string, rules []storage.Rule) ([]storage.Rule, error)
	DeleteRule(ctx context.Context, publicKey string, id int64) error
}

// groupStore lists and changes resource groups.
type groupStore interface {
	Group(ctx context.Context, name string) (storage.Group, error)
	Groups(ctx context.Context, page, limit int) ([]storage.Group, int, error)
	PutGroup(ctx context.Context, g storage.Group) (created bool, err error)
	DeleteGroup(ctx context.Context, name string) error
}

// blobStore keeps image bytes. It deletes nothing: deletions go through
// the database's queue (storage/doc.go).
type blobStore interface {
	Get(ctx context.Context, key string) ([]byte, error)
	// GetInto is Get reading into buf's memory when it has room.
	GetInto(ctx context.Context, key string, buf []byte) ([]byte, error)
	Put(ctx context.Context, key string, data []byte) error
	// Open streams the blob at key (a video to decode); the caller closes
	// the reader.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// variationStore lists an image's stored variations.
type variationStore interface {
	Variations(ctx context.Context, img storage.Image) ([]storage.Variation, error)
}

// tokenStore keeps upload tokens.
type tokenStore interface {
	CreateUploadToken(ctx context.Context, t storage.UploadToken) error
	UploadToken(ctx context.Context, hash string) (storage.UploadToken, error)
	RevokeUploadToken(ctx context.Context, user, id string, at time.Time) (storage.UploadToken, error)
	SpendUploadToken(ctx context.Context, id string) error
}

// stores groups the consumer views of one database.
type stores struct {
	images      imageStore
	listing     listingStore
	metadata    metadataStore
	shortURLs   shortURLStore
	stats       statsStore
	keys        keyWriter
	rules       ruleWriter
	groups      groupStore
	keyNames    keyLister
	auditLog    auditStore
	variantRows variantLister
	tokens      tokenStore
	erasures    erasureStore
	quotas      quotaStore
}

// variantLister lists an image's cached variants.
type variantLister interface {
	Variants(ctx context.Context, user, id string) ([]storage.Variant, error)
}

func newStores(db *storage.DB) stores {
	return stores{images: db, listing: db, metadata: db, shortURLs: db, stats: db, keys: db, rules: db, groups: db, keyNames: db, auditLog: db, variantRows: db,
		tokens: db, erasures: db, quotas: db}
}

var (
	_ imageStore     = (*storage.DB)(nil)
	_ listingStore   = (*storage.DB)(nil)
	_ metadataStore  = (*storage.DB)(nil)
	_ shortURLStore  = (*storage.DB)(nil)
	_ variantLister  = (*storage.DB)(nil)
	_ statsStore     = (*storage.DB)(nil)
	_ aclReader      = (*storage.DB)(nil)
	_ keyWriter      = (*storage.DB)(nil)
	_ ruleWriter     = (*storage.DB)(nil)
	_ groupStore     = (*storage.DB)(nil)
	_ pinger         = (*storage.DB)(nil)
	_ variationStore = (*storage.DB)(nil)
	_ tokenStore     = (*storage.DB)(nil)
	_ blobStore      = (*storage.Blobs)(nil)
	_ pinger         = (*storage.Blobs)(nil)
)

// qualityStore is the optional ability of an imageStore to keep the
// auto-quality answers of images (storage.DB has it).
type qualityStore interface {
	Qualities(ctx context.Context, user, id string) ([]storage.QualityAnswer, error)
	SetQuality(ctx context.Context, user, id string, a storage.QualityAnswer) error
}
