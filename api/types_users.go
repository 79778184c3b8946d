package api

// The JSON bodies of a user and its quotas (types.go says how the answer
// types are used).

// User is GET /users/{user}: the user's image count, its latest change,
// and its quotas and usage (api/README.md "Quotas").
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
