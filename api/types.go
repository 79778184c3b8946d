package api

import (
	"encoding/json"
	"slices"
)

// The types below are the JSON bodies of the API's answers as clients
// read them, described in api/openapi.yaml; the admin UI (package web)
// decodes the API's answers into them. Where the API builds an answer
// from a map (to keep its field order or leave out fields not asked for),
// TestResponseTypes checks that every field the API sends has its place
// here.

// Status is GET /status: whether the database and the blob store answer.
type Status struct {
	Timestamp string `json:"timestamp"`
	Date      string `json:"date"`
	Database  bool   `json:"database"`
	Storage   bool   `json:"storage"`
	// Sinks are the events outbox's sinks, where events are on.
	Sinks []SinkStatus `json:"sinks,omitempty"`
}

// Stats is GET /stats.
type Stats struct {
	// Users holds each user's counts, by name.
	Users map[string]UserStats `json:"users"`
	Total StatsTotal           `json:"total"`
	// Custom is what stats.get listeners added.
	Custom    map[string]any `json:"custom"`
	NumImages int64          `json:"numImages"`
	NumUsers  int64          `json:"numUsers"`
	NumBytes  int64          `json:"numBytes"`
}

// UserStats are one user's counts in GET /stats.
type UserStats struct {
	NumImages int64 `json:"numImages"`
	NumBytes  int64 `json:"numBytes"`
}

// StatsTotal are the totals of GET /stats.
type StatsTotal struct {
	NumImages int64 `json:"numImages"`
	NumUsers  int64 `json:"numUsers"`
	NumBytes  int64 `json:"numBytes"`
}

// Search is the paging block of a listing.
type Search struct {
	Hits  int `json:"hits"`
	Page  int `json:"page"`
	Limit int `json:"limit"`
	Count int `json:"count"`
}

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
	// What the analysis at upload learnt (absent for images not analysed;
	// see README "Image analysis").
	BlurHash     string   `json:"blurhash"`
	ThumbHash    string   `json:"thumbhash"`
	AverageColor string   `json:"averageColor"`
	Palette      []string `json:"palette"`
	PHash        string   `json:"phash"`
	// Distance is set in similar-image listings only.
	Distance *int `json:"distance"`
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

// FilterStatus is what GET /filters shows about one filter folder. State
// is that of the folder's current files (loading, ready or failed); Loaded
// says whether a version serves, which may be an older one while the
// current files load or after they failed.
type FilterStatus struct {
	// Name is the filter's name; a canary version is listed as
	// <name>@canary.
	Name string `json:"name"`
	// Source is "dir" for a folder of filters.dir (this instance's only,
	// read-only through the API), "api" for a version deployed through
	// the API; Version is the latter's version.
	Source      string `json:"source"`
	Version     string `json:"version,omitempty"`
	State       string `json:"state"`
	Loaded      bool   `json:"loaded"`
	ContentHash string `json:"contentHash,omitempty"`
	// Manifest is the filter's filter.json as validated.
	Manifest json.RawMessage  `json:"manifest,omitempty"`
	Error    string           `json:"error,omitempty"`
	Stats    *FilterStats     `json:"stats,omitempty"`
	Counters map[string]int64 `json:"counters,omitempty"`
}

// FilterStats are a loaded filter's call counters.
type FilterStats struct {
	Calls      int64 `json:"calls"`
	Errors     int64 `json:"errors"`
	Timeouts   int64 `json:"timeouts"`
	Rejections int64 `json:"rejections"`
	// P50Ms and P99Ms are percentiles of the most recent call durations,
	// in milliseconds.
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	// Busy counts calls refused because the filter had no room.
	Busy int64 `json:"busy"`
	// Instances is how many instances exist now; Waiting how many calls
	// wait for one.
	Instances int `json:"instances"`
	Waiting   int `json:"waiting"`
}

// FilterList is GET /filters and POST /filters/reload.
type FilterList struct {
	// Filters are this instance's filters.
	Filters []FilterStatus `json:"filters"`
	// Deployed is the active set of filters deployed through the API,
	// with each one's versions (GET /filters only).
	Deployed []DeployedFilter `json:"deployed"`
	// Instances are the instances that reported what they loaded in the
	// last minute (GET /filters only).
	Instances []FilterInstance `json:"instances"`
}

// DeployedFilter is one filter of the active set: the version every
// instance serves, whether it is enabled, its canary, and its versions.
type DeployedFilter struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Previous is the version a rollback without a version goes back to.
	Previous string `json:"previous,omitempty"`
	Enabled  bool   `json:"enabled"`
	// Canary, when set, is served instead of Version for Percent percent
	// of images, chosen per image.
	Canary   string          `json:"canary,omitempty"`
	Percent  int             `json:"percent"`
	Versions []FilterVersion `json:"versions"`
}

// FilterVersion is one uploaded version of a filter.
type FilterVersion struct {
	// Version is the SHA-256 of the bundle (README, Filters through the
	// API); its first 32 digits are the filter's contentHash.
	Version  string          `json:"version"`
	Size     int64           `json:"size"`
	Created  string          `json:"created"`
	Actor    string          `json:"actor,omitempty"`
	Manifest json.RawMessage `json:"manifest"`
}

// FilterInstance is what one instance last reported it serves.
type FilterInstance struct {
	Instance  string          `json:"instance"`
	Heartbeat string          `json:"heartbeat"`
	Filters   []FilterRunning `json:"filters"`
}

// FilterRunning is one filter an instance serves: its source, version (for
// the API's), content hash and state.
type FilterRunning struct {
	Name        string `json:"name"`
	Source      string `json:"source"`
	Version     string `json:"version,omitempty"`
	ContentHash string `json:"contentHash,omitempty"`
	State       string `json:"state"`
}

// Group is a resource group.
type Group struct {
	Name      string   `json:"name"`
	Resources []string `json:"resources"`
	// Source is where the group is defined: "builtin", "config" or
	// "database"; Mutable says whether PUT and DELETE may change it.
	Source  string `json:"source,omitempty"`
	Mutable bool   `json:"mutable"`
}

// GroupList is GET /groups.
type GroupList struct {
	Search Search  `json:"search"`
	Groups []Group `json:"groups"`
	// Mutable is false when no group can change through the API.
	Mutable bool `json:"mutable"`
}

// KeyEntry is one public key of GET /keys.
type KeyEntry struct {
	PublicKey string `json:"publicKey"`
	Source    string `json:"source"`
	Mutable   bool   `json:"mutable"`
}

// KeyList is GET /keys.
type KeyList struct {
	Keys []KeyEntry `json:"keys"`
	// Mutable is false when keys cannot change through the API.
	Mutable bool `json:"mutable"`
}

// Rule is an access rule: a group or resources, for users ("*" for every
// user). With expandGroups a group rule lists its group's resources too.
type Rule struct {
	ID        int64    `json:"id"`
	Group     string   `json:"group,omitempty"`
	Resources []string `json:"resources,omitempty"`
	Users     Users    `json:"users"`
}

// UnmarshalJSON reads "*" or an array of names.
func (u *Users) UnmarshalJSON(b []byte) error {
	var all string
	if json.Unmarshal(b, &all) == nil {
		*u = Users{all}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*u = list
	return nil
}

// Covers reports whether the users include user; with user "" (routes
// without a user) every rule applies, as the API decides.
func (u Users) Covers(user string) bool {
	return user == "" || slices.Contains(u, "*") || slices.Contains(u, user)
}

// AuditEntry is one entry of the audit log.
type AuditEntry struct {
	ID      int64          `json:"id"`
	Time    string         `json:"time"`
	Actor   string         `json:"actor"`
	Address string         `json:"address,omitempty"`
	Action  string         `json:"action"`
	Target  string         `json:"target"`
	Detail  map[string]any `json:"detail"`
}

// AuditList is GET /audit.
type AuditList struct {
	Search  Search       `json:"search"`
	Entries []AuditEntry `json:"entries"`
}

// UsageDay is one counter of GET /usage.
type UsageDay struct {
	Day   string `json:"day"`
	Label string `json:"label"`
	Value int64  `json:"value"`
}

// KeyTimes is when a key was created and last used (RFC 3339; empty when
// unknown).
type KeyTimes struct {
	Created  string `json:"created"`
	LastUsed string `json:"lastUsed"`
}

// Usage is GET /usage; Keys is set for the metric key.requests only.
type Usage struct {
	Metric string              `json:"metric"`
	Since  string              `json:"since"`
	Days   []UsageDay          `json:"days"`
	Keys   map[string]KeyTimes `json:"keys"`
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

// ErrorBody is the JSON error model.
type ErrorBody struct {
	Error           ErrorDetail `json:"error"`
	ImageIdentifier string      `json:"imageIdentifier,omitempty"`
}

// ErrorDetail is the error model's error.
type ErrorDetail struct {
	Code             int    `json:"code"`
	Message          string `json:"message"`
	Date             string `json:"date"`
	ServiceErrorCode int    `json:"serviceErrorCode"`
}

// Webhook is a subscription (GET /webhooks/{webhook}); its secret is shown
// only when it is created (WebhookCreated).
type Webhook struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Users       []string `json:"users"`
	Description string   `json:"description"`
	Active      bool     `json:"active"`
	// Failing is true once a delivery was given up on, until one
	// succeeds; FailingSince says since when.
	Failing      bool    `json:"failing"`
	FailingSince *string `json:"failingSince"`
	Created      string  `json:"created"`
	Updated      string  `json:"updated"`
}

// WebhookCreated is POST /webhooks: the subscription and its secret.
type WebhookCreated struct {
	Webhook
	Secret string `json:"secret"`
}

// WebhookList is GET /webhooks.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// Delivery is one event on its way to a subscription, with its attempts.
type Delivery struct {
	ID      int64  `json:"id"`
	EventID string `json:"eventId"`
	Type    string `json:"type"`
	Subject string `json:"subject"`
	// State is pending, delivered or failed.
	State    string `json:"state"`
	Attempts int    `json:"attempts"`
	Created  string `json:"created"`
	// NextAttempt is set while pending, Finished once delivered or failed.
	NextAttempt *string           `json:"nextAttempt"`
	Finished    *string           `json:"finished"`
	LastStatus  int               `json:"lastStatus"`
	LastError   *string           `json:"lastError"`
	Log         []DeliveryAttempt `json:"log"`
}

// DeliveryAttempt is one try of a delivery.
type DeliveryAttempt struct {
	Time string `json:"time"`
	// Status is the receiver's HTTP status, 0 when it gave none.
	Status int `json:"status"`
	// Latency is in seconds.
	Latency float64 `json:"latency"`
	// Response is the first bytes (at most 1024) of the answer.
	Response string  `json:"response"`
	Error    *string `json:"error"`
}

// DeliveryList is GET /webhooks/{webhook}/deliveries.
type DeliveryList struct {
	Search     Search     `json:"search"`
	Deliveries []Delivery `json:"deliveries"`
}

// PingResult is POST /webhooks/{webhook}/ping: what the receiver made of
// a test event.
type PingResult struct {
	// ID is the test event's id (its webhook-id header).
	ID        string  `json:"id"`
	Delivered bool    `json:"delivered"`
	Status    int     `json:"status"`
	Latency   float64 `json:"latency"`
	Response  string  `json:"response"`
	Error     *string `json:"error"`
}

// UploadTokenRequest is the body of POST /users/{user}/uploadtokens; every
// field may be left out (README, Upload tokens).
type UploadTokenRequest struct {
	// Uploads is how many uploads the token allows (default 1).
	Uploads *int `json:"uploads,omitempty"`
	// MaxBytes caps each upload's size (default limits.maxBodyBytes, at
	// most that).
	MaxBytes *int64 `json:"maxBytes,omitempty"`
	// MaxPixels caps each upload's width x height (default
	// limits.maxPixels, at most that).
	MaxPixels *int64 `json:"maxPixels,omitempty"`
	// ExpiresIn is the token's life in seconds (default 900, at most
	// uploads.tokenMaxTTL).
	ExpiresIn *int64 `json:"expiresIn,omitempty"`
	// Formats lists the image types the token accepts (default
	// uploads.formats).
	Formats []string `json:"formats,omitempty"`
	// Metadata is given to each image uploaded with the token.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Origin is the one browser origin the token may be used from.
	Origin *string `json:"origin,omitempty"`
}

// UploadToken is the answer of POST /users/{user}/uploadtokens: the token
// (shown only this once) and the policy it carries.
type UploadToken struct {
	Token string `json:"token"`
	// ID names the token in the audit log and may revoke it.
	ID string `json:"id"`
	// Expires is an HTTP-date.
	Expires   string         `json:"expires"`
	Uploads   int            `json:"uploads"`
	MaxBytes  int64          `json:"maxBytes"`
	MaxPixels int64          `json:"maxPixels"`
	Formats   []string       `json:"formats"`
	Metadata  map[string]any `json:"metadata"`
	Origin    string         `json:"origin,omitempty"`
}

// UploadTokenRevoked is the answer of DELETE
// /users/{user}/uploadtokens/{token}.
type UploadTokenRevoked struct {
	ID string `json:"id"`
	// Revoked is when the token was revoked, an HTTP-date.
	Revoked string `json:"revoked"`
}

// BlocklistEntry is one entry of the takedown blocklist: Checksum, or
// PHash with Distance, is set.
type BlocklistEntry struct {
	ID       int64   `json:"id"`
	Checksum *string `json:"checksum"`
	PHash    *string `json:"phash"`
	Distance *int    `json:"distance"`
	Reason   string  `json:"reason"`
	// Actor is the public key that added the entry.
	Actor   string `json:"actor"`
	Created string `json:"created"`
}

// BlocklistList is GET /blocklist.
type BlocklistList struct {
	Search  Search           `json:"search"`
	Entries []BlocklistEntry `json:"entries"`
}

// BlocklistMatch is a stored image a blocklist entry matches.
type BlocklistMatch struct {
	User             string  `json:"user"`
	ImageIdentifier  string  `json:"imageIdentifier"`
	Extension        string  `json:"extension"`
	Size             int64   `json:"size"`
	Width            int     `json:"width"`
	Height           int     `json:"height"`
	Checksum         string  `json:"checksum"`
	OriginalChecksum *string `json:"originalChecksum"`
	// Distance is the bits between the image's perceptual hash and the
	// entry's (0 for a checksum entry).
	Distance int    `json:"distance"`
	Added    string `json:"added"`
}

// BlocklistResult is an entry with the images removed by the request and
// a page of the stored images it matches (POST /blocklist, GET
// /blocklist/{entry}, POST /blocklist/{entry}/remove).
type BlocklistResult struct {
	Entry   BlocklistEntry   `json:"entry"`
	Removed []BlocklistMatch `json:"removed"`
	Search  Search           `json:"search"`
	Matches []BlocklistMatch `json:"matches"`
}

// User is GET /users/{user}: the user's image count, its latest change,
// and its quotas and usage (README "Quotas").
type User struct {
	User         string     `json:"user"`
	NumImages    int        `json:"numImages"`
	LastModified string     `json:"lastModified"`
	Quota        Quotas     `json:"quota"`
	Usage        QuotaUsage `json:"usage"`
}

// Quotas are a user's quotas, each 0 for unlimited.
type Quotas struct {
	Images           int64 `json:"images"`
	Bytes            int64 `json:"bytes"`
	VariantsPerImage int64 `json:"variantsPerImage"`
}

// QuotaOverride is a user's own quotas; nil where the default holds.
type QuotaOverride struct {
	Images           *int64 `json:"images"`
	Bytes            *int64 `json:"bytes"`
	VariantsPerImage *int64 `json:"variantsPerImage"`
}

// QuotaUsage is what a user stores: Images and Bytes (of the originals)
// count against the quotas; the cached variants and stored variations
// are shown beside them.
type QuotaUsage struct {
	Images              int64 `json:"images"`
	Bytes               int64 `json:"bytes"`
	Variants            int64 `json:"variants"`
	VariantBytes        int64 `json:"variantBytes"`
	MaxVariantsPerImage int64 `json:"maxVariantsPerImage"`
	Variations          int64 `json:"variations"`
	VariationBytes      int64 `json:"variationBytes"`
}

// UserQuota is GET and PUT /users/{user}/quota: the quotas in force, the
// user's own, the configured defaults and the usage.
type UserQuota struct {
	User     string        `json:"user"`
	Quota    Quotas        `json:"quota"`
	Override QuotaOverride `json:"override"`
	Defaults Quotas        `json:"defaults"`
	// Updated is when the user's own quotas last changed; nil when the
	// user has none.
	Updated *string    `json:"updated"`
	Usage   QuotaUsage `json:"usage"`
}
