package api

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/storage"
)

// This file lets an upload through with an upload token (uploadtokens.go
// issues them): `Authorization: Bearer <token>` or `?uploadToken=<token>`
// on POST /users/<user>/images, and nothing else. The token stands in for
// the signature and the access rule; the upload is the issuing key's, and
// its policy bounds what is read and stored.

// Service error codes of upload token refusals (api/README.md, Upload tokens).
const (
	codeUploadTokenUnknown = 110
	codeUploadTokenExpired = 111
	codeUploadTokenRevoked = 112
	codeUploadTokenUsedUp  = 113
	codeUploadTokenUser    = 114
	codeUploadTokenRoute   = 115
	codeUploadTokenOrigin  = 116
	codeUploadTokenIssuer  = 117
)

// uploadTokenOf returns the upload token the request carries: the
// uploadToken query parameter, or a Bearer credential that is one (other
// Bearer credentials are a proxy's business, not ours, unless nothing
// else authenticates an upload: foreignBearer).
func (c *call) uploadTokenOf() (string, bool) {
	if c.query.Has("uploadToken") {
		return c.query.Get("uploadToken"), true
	}
	if cred, ok := c.bearer(); ok && strings.HasPrefix(cred, uploadTokenPrefix) {
		return cred, true
	}
	return "", false
}

// bearer returns the request's Bearer credential, if it has one.
func (c *call) bearer() (string, bool) {
	scheme, cred, found := strings.Cut(strings.TrimSpace(c.r.Header.Get("Authorization")), " ")
	return strings.TrimSpace(cred), found && strings.EqualFold(scheme, "Bearer")
}

// foreignBearer refuses an upload whose only credential is a Bearer one
// that is not an upload token: the client meant it as one (a proxy's own
// Bearer credential comes with the signature the upload needs anyway),
// and "Permission denied" or a missing signature would not say so.
func (c *call) foreignBearer() error {
	if _, ok := c.bearer(); !ok || !c.isUpload() {
		return nil
	}
	if ts, _ := c.authValue("Authenticate-Timestamp", "timestamp"); ts != "" {
		return nil
	}
	if sig, _ := c.authValue("Authenticate-Signature", "signature"); sig != "" {
		return nil
	}
	c.allowTokenOrigin(c.r.Header.Get("Origin")) // as for an unknown token: the page may read why
	return tokenRefusal(http.StatusUnauthorized, codeUploadTokenUnknown, "Unknown upload token: the Bearer credential is not an upload token "+
		"(those start with %s); issue one with POST /users/%s/uploadtokens, or sign the upload instead", uploadTokenPrefix, c.params["user"])
}

// isUpload reports whether the call is the one a token authorises.
func (c *call) isUpload() bool {
	return (c.route.name == "images" && c.method == http.MethodPost) || c.route.name == "uploads"
}

// tokenRefusal is an upload token refusal: 401 with a WWW-Authenticate
// challenge for a token that is not (or no longer) a credential, 403 for
// one used where it does not apply.
func tokenRefusal(status, code int, format string, args ...any) *Error {
	e := coded(status, code, fmt.Sprintf(format, args...))
	if status == http.StatusUnauthorized {
		e.Header = http.Header{"Www-Authenticate": {`Bearer error="invalid_token", error_description="` +
			strings.ReplaceAll(e.Msg, `"`, "'") + `"`}}
	}
	return e
}

// useUploadToken checks the upload token the call carries, if any, and
// makes the call the upload of its issuing key with the token's policy
// and metadata; the listeners of authentication and access control then
// let it through. With an Origin, the answer is readable by that page
// unless the token names another origin.
func (s *Server) useUploadToken(c *call) error {
	raw, ok := c.uploadTokenOf()
	if !ok {
		return c.foreignBearer()
	}
	if !c.isUpload() {
		return tokenRefusal(http.StatusForbidden, codeUploadTokenRoute,
			"An upload token authorises only uploads: POST /users/<user>/images and /users/<user>/uploads")
	}
	origin := c.r.Header.Get("Origin")
	t, err := s.tokens.UploadToken(c.ctx(), tokenHash(raw))
	if isNotExist(err) {
		c.allowTokenOrigin(origin)
		return tokenRefusal(http.StatusUnauthorized, codeUploadTokenUnknown, "Unknown upload token")
	}
	if err != nil {
		return err
	}
	if t.Origin == "" || strings.EqualFold(t.Origin, origin) {
		c.allowTokenOrigin(origin)
	}
	if err := s.checkUploadToken(c.ctx(), t, c.params["user"], origin); err != nil {
		return err
	}
	c.token, c.publicKey = &t, t.PublicKey
	c.upload.metadata = maps.Clone(t.Metadata)
	return nil
}

// checkUploadToken says why t may not upload for user from origin now, or
// nil: it must be the user's, neither revoked nor expired nor used up, for
// this origin (when it names one and the request has one), and its issuing
// key must still be allowed images.post on the user.
func (s *Server) checkUploadToken(ctx context.Context, t storage.UploadToken, user, origin string) error {
	switch {
	case t.User != user:
		return tokenRefusal(http.StatusForbidden, codeUploadTokenUser, "Upload token is for user %s, not %s", t.User, user)
	case !t.Revoked.IsZero():
		return tokenRefusal(http.StatusUnauthorized, codeUploadTokenRevoked, "Upload token was revoked at %s", httpDate(t.Revoked))
	case !s.now().Before(t.Expires):
		return tokenRefusal(http.StatusUnauthorized, codeUploadTokenExpired, "Upload token expired at %s", httpDate(t.Expires))
	case t.UsesLeft <= 0:
		return tokenRefusal(http.StatusUnauthorized, codeUploadTokenUsedUp, "Upload token is used up: it allowed %d %s",
			t.Uses, plural(t.Uses, "upload", "uploads"))
	case t.Origin != "" && origin != "" && !strings.EqualFold(t.Origin, origin):
		return tokenRefusal(http.StatusForbidden, codeUploadTokenOrigin, "Upload token is for pages on %s, not %s", t.Origin, origin)
	}
	_, rules, ok, err := s.acl.key(ctx, t.PublicKey)
	if err != nil {
		return err
	}
	if ok {
		ok, err = s.acl.allows(ctx, rules, "images.post", user)
		if err != nil {
			return err
		}
	}
	if !ok {
		return tokenRefusal(http.StatusForbidden, codeUploadTokenIssuer,
			"The key that issued this upload token, %s, may no longer upload images for %s", t.PublicKey, user)
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// tokenSpent is the refusal of an upload whose token had no use left when
// its image was to be committed (storage.ErrUploadTokenSpent): the token
// read again says which refusal it is.
func (s *Server) tokenSpent(c *call) error {
	t, err := s.tokens.UploadToken(c.ctx(), c.token.Hash)
	if isNotExist(err) {
		return tokenRefusal(http.StatusUnauthorized, codeUploadTokenUnknown, "Unknown upload token")
	}
	if err != nil {
		return err
	}
	if err := s.checkUploadToken(c.ctx(), t, c.params["user"], ""); err != nil {
		return err
	}
	// Expired by the database's clock a moment before this one's.
	return tokenRefusal(http.StatusUnauthorized, codeUploadTokenExpired, "Upload token expired at %s", httpDate(t.Expires))
}

// spendUploadToken spends a use of the upload token id ("" for an upload
// made without one), for an upload that stores nothing (CommitImage
// spends the use of one that does, storage.Image.UploadToken).
func (s *Server) spendUploadToken(ctx context.Context, id string) error {
	if id != "" {
		return s.tokens.SpendUploadToken(ctx, id)
	}
	return nil
}

// allowTokenOrigin lets the page at origin read the answer to an upload
// made with a token (its service headers too).
func (c *call) allowTokenOrigin(origin string) {
	if origin == "" {
		return
	}
	c.w.Header().Set("Access-Control-Allow-Origin", origin)
	c.varyOrigin = true
	if _, ok := c.w.(*exposeWriter); !ok {
		c.w = &exposeWriter{ResponseWriter: c.w, prefix: c.s.cfg.HeaderPrefix + "-"}
	}
}

// uploadPreflight answers the CORS preflight of an upload made with a
// token (a POST to the upload route asking to send Authorization, or with
// uploadToken in its URL), from any origin: the preflight carries no
// credential, so the token's origin is checked on the upload itself, whose
// answer only that origin may read. handled is true when it answered.
func (s *Server) uploadPreflight(c *call) (handled bool) {
	origin := c.r.Header.Get("Origin")
	want := strings.ToUpper(c.r.Header.Get("Access-Control-Request-Method"))
	methods := "OPTIONS, POST"
	switch {
	case c.method != http.MethodOptions || origin == "":
		return false
	case c.route.name == "images" && want == http.MethodPost:
	case c.route.name == "uploads" && slices.Contains([]string{"POST", "HEAD", "PATCH", "DELETE"}, want):
		methods = "OPTIONS, POST, HEAD, PATCH, DELETE"
	default:
		return false
	}
	var requested []string
	for _, h := range strings.Split(c.r.Header.Get("Access-Control-Request-Headers"), ",") {
		if h = http.CanonicalHeaderKey(strings.TrimSpace(h)); h != "" {
			requested = append(requested, h)
		}
	}
	if !c.query.Has("uploadToken") && !slices.Contains(requested, "Authorization") {
		return false
	}
	allowed := []string{"Authorization", "Content-Type", "Accept"}
	for _, h := range requested {
		if !slices.Contains(allowed, h) {
			allowed = append(allowed, h)
		}
	}
	h := c.w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", methods)
	h.Set("Access-Control-Allow-Headers", strings.Join(allowed, ", "))
	h.Set("Access-Control-Max-Age", strconv.Itoa(s.cfg.CORS.MaxAge))
	c.varyOrigin = true
	c.commonHeaders()
	c.w.WriteHeader(http.StatusNoContent)
	return true
}
