package api

import "encoding/json"

// The JSON bodies of the image routes: listings, uploads, short URLs and
// cached variants (types.go says how the answer types are used).

// ImageEntry is one image of a listing (GET /images, GET
// /users/{user}/images); only the fields[] asked for are set.
type ImageEntry struct {
	User string `json:"user"`
	// ID is the image identifier.
	ID        string `json:"imageIdentifier"`
	Extension string `json:"extension"`
	Mime      string `json:"mime"`
	MimeType  string `json:"mimeType"`
	Size      int64  `json:"size"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	Checksum  string `json:"checksum"`
	// OriginalChecksum is empty when the API answers null.
	OriginalChecksum string `json:"originalChecksum"`
	Added            string `json:"added"`
	Updated          string `json:"updated"`
	// Metadata is set with metadata=1.
	Metadata json.RawMessage `json:"metadata"`
	// Video is set for a video (uploads.video).
	Video *VideoEntry `json:"video"`
	// What the analysis at upload learnt (absent for images not analysed;
	// see engine/README.md "Image analysis").
	BlurHash     string   `json:"blurhash"`
	ThumbHash    string   `json:"thumbhash"`
	AverageColor string   `json:"averageColor"`
	Palette      []string `json:"palette"`
	PHash        string   `json:"phash"`
	// Distance is set in similar-image listings only.
	Distance *int `json:"distance"`
}

// VideoEntry is what a video's header said at upload: its duration in
// seconds, its average frame rate and its codec (h264, hevc, av1, vp8,
// vp9). Its width and height are the entry's, after the display rotation.
type VideoEntry struct {
	Duration float64 `json:"duration"`
	FPS      float64 `json:"fps"`
	Codec    string  `json:"codec"`
}

// Listing is a page of images.
type Listing struct {
	Search Search       `json:"search"`
	Images []ImageEntry `json:"images"`
}

// Uploaded is the answer to an upload.
type Uploaded struct {
	ImageIdentifier string `json:"imageIdentifier"`
	Width           int    `json:"width"`
	Height          int    `json:"height"`
	Extension       string `json:"extension"`
}

// ShortURL is a short URL, as GET .../shorturls lists them and GET
// .../shorturls/{id} answers.
type ShortURL struct {
	ID              string `json:"id,omitempty"`
	User            string `json:"user"`
	ImageIdentifier string `json:"imageIdentifier"`
	// Extension is the output format, nil for the stored type.
	Extension *string       `json:"extension"`
	Query     ShortURLQuery `json:"query"`
}

// ShortURLQuery is a short URL's transformation chain.
type ShortURLQuery struct {
	T []string `json:"t,omitempty"`
}

// ShortURLList is GET .../shorturls.
type ShortURLList struct {
	ShortURLs []ShortURL `json:"shortUrls"`
}

// Variant is one cached variant of an image.
type Variant struct {
	Hash     string `json:"hash"`
	Size     int64  `json:"size"`
	Created  string `json:"created"`
	LastUsed string `json:"lastUsed"`
	Chain    string `json:"chain"` // steps joined by "|"
	Format   string `json:"format"`
}

// VariantList is GET .../variants.
type VariantList struct {
	Variants []Variant `json:"variants"`
}
