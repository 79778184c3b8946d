package api

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// Upload tokens (api/README.md, Upload tokens): a key that may upload for a user
// issues a token that uploads for that user alone, within a policy, so
// that a browser uploads without a private key. This file issues and
// revokes them; uploadtokenauth.go lets an upload through with one.

// uploadTokenPrefix starts every upload token, so that a token is told
// from an id, and a leaked one is recognised (by secret scanners too).
const uploadTokenPrefix = "vut_"

// Bounds of an upload token's policy.
const (
	defaultTokenTTL = 15 * time.Minute
	maxTokenUploads = 10000
)

// newUploadToken returns a fresh token: the prefix and 32 bytes of the
// system's CSPRNG in unpadded base64url (47 characters).
func newUploadToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return uploadTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// newTokenID returns a token's public id: 8 random bytes in hex.
func newTokenID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// tokenHash is the hex SHA-256 of a token, by which it is stored.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// uploadTokenFields are the fields of POST .../uploadtokens, in the order
// an unknown field's message lists them.
var uploadTokenFields = []string{"uploads", "maxBytes", "maxPixels", "expiresIn", "formats", "metadata", "origin"}

// readUploadTokenRequest reads the body of POST .../uploadtokens; an empty
// body asks for every default.
func (c *call) readUploadTokenRequest() (UploadTokenRequest, error) {
	var req UploadTokenRequest
	data, err := readBody(c, c.s.cfg.Limits.MaxMetadataBytes+4096)
	if err != nil {
		return req, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return req, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	err = dec.Decode(&req)
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te) && te.Field != "":
		return req, errorf(http.StatusBadRequest, "Invalid '%s' in the upload token request: want %s", te.Field, jsonKind(te.Field))
	case err != nil && strings.HasPrefix(err.Error(), "json: unknown field "):
		return req, errorf(http.StatusBadRequest, "Unknown field %s in the upload token request (the fields are %s)",
			strings.TrimPrefix(err.Error(), "json: unknown field "), strings.Join(uploadTokenFields, ", "))
	case err != nil || dec.More():
		return req, errorf(http.StatusBadRequest, "Invalid JSON data")
	}
	return req, nil
}

// jsonKind says what a field of the upload token request holds.
func jsonKind(field string) string {
	switch field {
	case "formats":
		return "a list of image types"
	case "metadata":
		return "a JSON object"
	case "origin":
		return "a string"
	}
	return "a whole number"
}

// tokenPolicy checks req against the server's limits and fills in the
// defaults: the record to store, without its id, hash and times.
func (s *Server) tokenPolicy(req UploadTokenRequest) (storage.UploadToken, time.Duration, error) {
	ecfg := s.engine.Config()
	maxBytes, what := s.uploadLimit()
	p := storage.UploadToken{Uses: 1, MaxBytes: maxBytes, MaxPixels: ecfg.MaxPixels,
		Formats: slices.Clone(ecfg.Uploads.Formats)}
	ttl := min(defaultTokenTTL, s.cfg.Uploads.TokenMaxTTL)
	bad := func(format string, args ...any) error {
		return errorf(http.StatusBadRequest, "Invalid upload token request: "+format, args...)
	}
	if req.Uploads != nil {
		if *req.Uploads < 1 || *req.Uploads > maxTokenUploads {
			return p, 0, bad("uploads must be from 1 to %d, got %d", maxTokenUploads, *req.Uploads)
		}
		p.Uses = *req.Uploads
	}
	if req.MaxBytes != nil {
		if *req.MaxBytes < 1 || *req.MaxBytes > p.MaxBytes {
			return p, 0, bad("maxBytes must be from 1 to %d (%s), got %d", p.MaxBytes, what, *req.MaxBytes)
		}
		p.MaxBytes = *req.MaxBytes
	}
	if req.MaxPixels != nil {
		if *req.MaxPixels < 1 || *req.MaxPixels > p.MaxPixels {
			return p, 0, bad("maxPixels must be from 1 to %d (limits.maxPixels), got %d", p.MaxPixels, *req.MaxPixels)
		}
		p.MaxPixels = *req.MaxPixels
	}
	if req.ExpiresIn != nil {
		maxTTL := int64(s.cfg.Uploads.TokenMaxTTL / time.Second)
		if *req.ExpiresIn < 1 || *req.ExpiresIn > maxTTL {
			return p, 0, bad("expiresIn must be from 1 to %d seconds (uploads.tokenMaxTTL), got %d", maxTTL, *req.ExpiresIn)
		}
		ttl = time.Duration(*req.ExpiresIn) * time.Second
	}
	if req.Formats != nil {
		formats, err := tokenFormats(req.Formats, ecfg.Uploads.Formats)
		if err != nil {
			return p, 0, err
		}
		p.Formats = formats
	}
	if req.Metadata != nil {
		if err := s.checkTokenMetadata(req.Metadata); err != nil {
			return p, 0, err
		}
		p.Metadata = req.Metadata
	}
	if req.Origin != nil {
		o, err := parseOrigin(*req.Origin)
		if err != nil {
			return p, 0, err
		}
		p.Origin = o
	}
	return p, ttl, nil
}

// tokenFormats checks that formats (extensions, `jpeg` and `tiff` read as
// `jpg` and `tif`) are among those the server accepts for upload, and
// returns them deduplicated in the server's order.
func tokenFormats(formats, accepted []string) ([]string, error) {
	if len(formats) == 0 {
		return nil, errorf(http.StatusBadRequest, "Invalid upload token request: formats must name at least one image type "+
			"(leave it out to accept every one of %s)", strings.Join(accepted, ", "))
	}
	want := map[string]bool{}
	for _, f := range formats {
		f = strings.ToLower(strings.TrimPrefix(f, "."))
		switch f {
		case "jpeg":
			f = "jpg"
		case "tiff":
			f = "tif"
		}
		if !slices.Contains(accepted, f) {
			return nil, errorf(http.StatusBadRequest, "Invalid upload token request: format '%s' is not accepted for upload "+
				"(uploads.formats: %s)", f, strings.Join(accepted, ", "))
		}
		want[f] = true
	}
	var out []string
	for _, f := range accepted {
		if want[f] {
			out = append(out, f)
		}
	}
	return out, nil
}

// checkTokenMetadata applies the metadata rules (size, keys, depth) to
// the metadata a token attaches to its images.
func (s *Server) checkTokenMetadata(md map[string]any) error {
	b, err := json.Marshal(md)
	if err != nil {
		return errorf(http.StatusBadRequest, "Invalid metadata")
	}
	if int64(len(b)) > s.cfg.Limits.MaxMetadataBytes {
		return errorf(http.StatusBadRequest, "Invalid metadata. The document is larger than %d bytes", s.cfg.Limits.MaxMetadataBytes)
	}
	return validateMetadata(md, 1, s.cfg.Limits.MaxMetadataDepth)
}

// parseOrigin checks a browser origin, `scheme://host[:port]` with scheme
// http or https, and returns it as browsers send it in Origin: lower case,
// without a default port.
func parseOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	bad := err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != ""
	if bad {
		return "", errorf(http.StatusBadRequest, "Invalid upload token request: origin must be a browser origin "+
			"such as https://app.example.com (scheme, host and port only), got '%s'", o)
	}
	host := strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return u.Scheme + "://" + host, nil
}

// postUploadToken serves POST /users/<user>/uploadtokens (resource
// uploadtokens.post): a new token for the path's user with the policy of
// the body. The key must itself be allowed images.post on the user, so a
// token never hands on more than its issuer holds.
func (s *Server) postUploadToken(c *call) error {
	user := c.params["user"]
	_, rules, _, err := s.acl.key(c.ctx(), c.publicKey)
	if err != nil {
		return err
	}
	if ok, err := s.acl.allows(c.ctx(), rules, "images.post", user); err != nil {
		return err
	} else if !ok {
		return errorf(http.StatusForbidden, "Public key %s may not upload images for %s (images.post), so it cannot issue upload tokens for %s",
			c.publicKey, user, user)
	}
	req, err := c.readUploadTokenRequest()
	if err != nil {
		return err
	}
	rec, ttl, err := s.tokenPolicy(req)
	if err != nil {
		return err
	}
	token := newUploadToken()
	now := s.now().UTC().Truncate(time.Second)
	rec.Hash, rec.User, rec.PublicKey, rec.UsesLeft = tokenHash(token), user, c.publicKey, rec.Uses
	rec.Created, rec.Expires = now, now.Add(ttl)
	for range 3 { // an id drawn twice (64 bits) is drawn again
		rec.ID = newTokenID()
		if err = s.tokens.CreateUploadToken(c.ctx(), rec); !errors.Is(err, storage.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	// The answer holds a credential: no cache keeps it.
	c.w.Header().Set("Cache-Control", "no-store")
	return c.writeJSON(UploadToken{Token: token, ID: rec.ID, Expires: httpDate(rec.Expires), Uploads: rec.Uses,
		MaxBytes: rec.MaxBytes, MaxPixels: rec.MaxPixels, Formats: rec.Formats, Origin: rec.Origin,
		Metadata: nonNilMap(rec.Metadata)}, out{status: http.StatusCreated})
}

// nonNilMap is m, or an empty map for nil, so it encodes as {}.
func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return maps.Clone(m)
}

// deleteUploadToken serves DELETE /users/<user>/uploadtokens/<token>
// (resource uploadtoken.delete): revokes the user's token, named by the
// token itself or by its id (as the audit log shows it). The token's next
// upload is refused; revoking it again changes nothing.
func (s *Server) deleteUploadToken(c *call) error {
	user, name := c.params["user"], c.params["token"]
	id := name
	if strings.HasPrefix(name, uploadTokenPrefix) {
		t, err := s.tokens.UploadToken(c.ctx(), tokenHash(name))
		if isNotExist(err) || (err == nil && t.User != user) {
			return errorf(http.StatusNotFound, "Upload token not found")
		}
		if err != nil {
			return err
		}
		id = t.ID
	}
	t, err := s.tokens.RevokeUploadToken(c.ctx(), user, id, s.now())
	if isNotExist(err) {
		return errorf(http.StatusNotFound, "Upload token not found")
	}
	if err != nil {
		return err
	}
	return c.writeJSON(UploadTokenRevoked{ID: t.ID, Revoked: httpDate(t.Revoked)}, out{})
}
