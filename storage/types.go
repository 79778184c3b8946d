package storage

import (
	"net/url"
	"strings"
	"time"
)

// Image is one stored image's record.
type Image struct {
	User       string
	Identifier string
	Size       int64
	Extension  string
	Mime       string
	Width      int
	Height     int
	// Frames is the number of frames (1 for a still image), 0 when not
	// known (images stored before migration step 12).
	Frames           int
	Checksum         string
	OriginalChecksum string
	Added            time.Time
	Updated          time.Time
	// Version changes whenever the image's metadata does (see step 2 in
	// step0002_image_version.go); InsertImage sets it. Cached variants are
	// keyed by it.
	Version int64
	// BlobToken names this upload's blob and its variants' keys (ImageKey,
	// VariantPrefix): NewBlobToken's for every upload. Rows stored before
	// tokens have "", the key images/<user>/<id>.
	BlobToken string
	// Metadata is filled only by listings with Query.WithMetadata; given
	// to InsertImage, it is stored with the image in one transaction.
	Metadata map[string]any
	// Properties is filled by listings with Query.WithProperties (nil when
	// the image was never analysed); given to CommitImage, they are stored
	// with the image in one transaction.
	Properties *Properties
	// Distance is the Hamming distance to Query.Similar's hash in a
	// similarity listing, else 0.
	Distance int
	// Source, given to CommitImage, is the URL the image was fetched from
	// (an upload by URL): the audit entry of its creation records it. It
	// is not stored with the image.
	Source string
	// UploadToken, given to CommitImage, is the id of the upload token the
	// upload is made with: the commit spends one of its uses in the
	// image's transaction, and the audit entry of its creation names it
	// (`uploadToken`). It is not stored with the image.
	UploadToken string
	// Video is set for a video (migration step 28): what its container's
	// header said at upload.
	Video *Video
}

// Video is what a video's header says: its duration in seconds, its
// average frame rate and its video codec (h264, hevc, av1, vp8, vp9).
type Video struct {
	Duration float64
	FPS      float64
	Codec    string
}

// Key is the blob key of the image's bytes.
func (img Image) Key() string { return ImageKey(img.User, img.Identifier, img.BlobToken) }

// SortKey is one `sort[]` entry. Field is one of size, user,
// imageIdentifier, extension, mime, added, updated, width, height, checksum,
// originalChecksum.
type SortKey struct {
	Field string
	Desc  bool
}

// Query selects a page of images. Zero values mean "no filter".
type Query struct {
	// Users restricts to these users; empty means every user.
	Users []string
	// Page (1-based) and Limit select the page; Limit 0 means no limit.
	Page, Limit int
	// From and To bound Added, inclusive; zero means unbounded.
	From, To time.Time
	// IDs, Checksums and OriginalChecksums filter by value: OR within a
	// list, AND across lists.
	IDs, Checksums, OriginalChecksums []string
	// Metadata keeps the images whose metadata satisfies every match.
	Metadata []MetadataMatch
	// Sort orders the result; empty means added descending.
	Sort []SortKey
	// WithMetadata fills Image.Metadata.
	WithMetadata bool
	// WithProperties fills Image.Properties.
	WithProperties bool
	// Similar, when set, keeps the images whose perceptual hash is within
	// its distance and orders them nearest first (Sort is ignored).
	Similar *Similarity
}

// Similarity selects images by perceptual hash: those within MaxDistance
// (0-64) bits of Hash, except the image Exclude.
type Similarity struct {
	Hash        uint64
	MaxDistance int
	Exclude     ImageRef
}

// Page is one page of a listing plus the total number of matches.
type Page struct {
	Images []Image
	Hits   int
}

// UserStats counts one user's images.
type UserStats struct {
	User      string
	NumImages int64
	NumBytes  int64
}

// ShortURL points a 7-character id at an image, an output extension and a
// transformation query.
type ShortURL struct {
	ID        string
	User      string
	Image     string
	Extension string // "" when none
	Query     string // canonical query string (ShortURLQuery), e.g. "t%5B%5D=thumbnail&t%5B%5D=desaturate"; "" when none
}

// ShortURLQuery is the canonical query of a short URL's transformations:
// each a t[] parameter, encoded, in order.
func ShortURLQuery(ts []string) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = "t%5B%5D=" + url.QueryEscape(t)
	}
	return strings.Join(parts, "&")
}

// Key is a public/private key pair.
type Key struct {
	PublicKey  string
	PrivateKey string
	// Created is when the key was made; zero for keys made before
	// migration step 10. PutKey sets it on a new key and ignores it.
	Created time.Time
}

// Group is a named set of access-control resources.
type Group struct {
	Name      string
	Resources []string
}

// Rule grants a public key resources (or a group's resources) on users.
// Users is ["*"] for every user. Exactly one of Group and Resources is set.
type Rule struct {
	ID        int64
	PublicKey string
	Group     string
	Resources []string
	Users     []string
}
