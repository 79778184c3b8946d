package api

// The JSON bodies of the upload token routes (types.go says how the answer
// types are used).

// UploadTokenRequest is the body of POST /users/{user}/uploadtokens; every
// field may be left out (api/README.md, Upload tokens).
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
