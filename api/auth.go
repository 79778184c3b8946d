package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// signatureWindow is how far a write's timestamp may be from server time.
const signatureWindow = 120 * time.Second

var timestampPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$`)

// timestampForm is the form timestampPattern accepts, as messages name it.
const timestampForm = "YYYY-MM-DDTHH:MM:SSZ"

// authenticate is the authentication listener (priority 100): reads on
// guarded routes need an access token, writes a signature.
func (s *Server) authenticate(ctx context.Context, ev *Event) error {
	c := ev.call
	if c.route.public() || c.token != nil || c.signed {
		return nil
	}
	method := c.method
	if c.route.name == "uploads" {
		method = http.MethodPost // every tus request is signed like a write
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		return s.checkAccessToken(ctx, c)
	case http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch:
		err := s.checkSignature(ctx, c)
		c.signed = err == nil
		return err
	}
	return nil
}

// sign is lower-case hex HMAC-SHA256.
func sign(key, data string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(data))
	return hex.EncodeToString(m.Sum(nil))
}

// equalMAC compares hex MACs in constant time.
func equalMAC(a, b string) bool { return hmac.Equal([]byte(a), []byte(b)) }

// privateKey is the private key of the call's key; an unknown key is
// "Permission denied" (unknownKey).
func (s *Server) privateKey(ctx context.Context, c *call) (string, error) {
	priv, _, ok, err := s.acl.key(ctx, c.publicKey)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", c.unknownKey()
	}
	return priv, nil
}

// checkAccessToken verifies `accessToken`, the HMAC-SHA256 of the URI under
// the key's private key, against every URI the client may have signed
// (tokenCandidates).
func (s *Server) checkAccessToken(ctx context.Context, c *call) error {
	token := c.query.Get("accessToken")
	if token == "" {
		return errorf(http.StatusBadRequest, "Missing access token: a read needs accessToken=, the HMAC-SHA256 of the URL "+
			"under the private key of %q (vitrine sign <URL> prints the URL with it)", c.publicKey)
	}
	priv, err := s.privateKey(ctx, c)
	if err != nil {
		return err
	}
	for _, u := range s.tokenCandidates(c) {
		if equalMAC(sign(priv, u), token) {
			return nil
		}
	}
	return errorf(http.StatusBadRequest, "Incorrect access token: accessToken is not the HMAC-SHA256 of this URL "+
		"(without accessToken) under the private key of %q; sign the URL exactly as it is sent, query included", c.publicKey)
}

var accessTokenParam = regexp.MustCompile(`(^|[?&])accessToken=[^&]*&?`)

// stripAccessToken removes accessToken wherever it appears, then trailing &
// and ?.
func stripAccessToken(u string) string {
	u = accessTokenParam.ReplaceAllStringFunc(u, func(m string) string {
		if strings.HasPrefix(m, "?") {
			return "?"
		}
		if strings.HasPrefix(m, "&") {
			return "&"
		}
		return ""
	})
	return strings.TrimRight(u, "&?")
}

// tokenCandidates lists the URIs a client may have signed: the URI with its
// query URL-decoded, as received, and both again with t[] and t[0] array
// styles swapped (plain and RFC 3986-encoded), for each accepted scheme.
func (s *Server) tokenCandidates(c *call) []string {
	path, decodedPath, rawQuery := requestTarget(c.r)
	decodedQuery := phpURLDecode(rawQuery)
	swapped := swapArrayStyle(decodedQuery)
	suffixes := []string{
		join(decodedPath, decodedQuery),
		join(path, rawQuery),
		join(decodedPath, swapped),
		join(decodedPath, encodeQuery(swapped)),
	}
	var out []string
	for _, base := range s.bases(c) {
		for _, sfx := range suffixes {
			out = append(out, stripAccessToken(base+sfx))
		}
	}
	return out
}

// requestTarget splits the request target as the client sent it into its
// path (raw and decoded) and raw query.
func requestTarget(r *http.Request) (path, decodedPath, rawQuery string) {
	path, rawQuery = r.URL.EscapedPath(), r.URL.RawQuery
	if r.RequestURI != "" && !strings.HasPrefix(r.RequestURI, "http") {
		path, rawQuery, _ = strings.Cut(r.RequestURI, "?")
	}
	decodedPath = path
	if p, err := url.PathUnescape(path); err == nil {
		decodedPath = p
	}
	return path, decodedPath, rawQuery
}

// join is path with query, if any, after a "?".
func join(path, query string) string {
	if query == "" {
		return path
	}
	return path + "?" + query
}

// phpURLDecode decodes like PHP urldecode: `+` is a space, bad escapes stay.
func phpURLDecode(s string) string {
	if v, err := url.QueryUnescape(s); err == nil {
		return v
	}
	return strings.ReplaceAll(s, "+", " ")
}

var indexedKey = regexp.MustCompile(`^([^\[\]]+)\[(\d*)\]$`)

// swapArrayStyle rewrites `t[]=a&t[]=b` as `t[0]=a&t[1]=b` and the other way
// round, leaving everything else as it is.
func swapArrayStyle(query string) string {
	if query == "" {
		return ""
	}
	pairs := strings.Split(query, "&")
	counts := map[string]int{}
	for i, p := range pairs {
		k, v, hasV := strings.Cut(p, "=")
		m := indexedKey.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		if m[2] == "" {
			k = m[1] + "[" + strconv.Itoa(counts[m[1]]) + "]"
			counts[m[1]]++
		} else {
			k = m[1] + "[]"
		}
		if hasV {
			pairs[i] = k + "=" + v
		} else {
			pairs[i] = k
		}
	}
	return strings.Join(pairs, "&")
}

// encodeQuery percent-encodes keys and values RFC 3986 style.
func encodeQuery(query string) string {
	if query == "" {
		return ""
	}
	pairs := strings.Split(query, "&")
	for i, p := range pairs {
		k, v, hasV := strings.Cut(p, "=")
		k = strings.ReplaceAll(url.QueryEscape(k), "+", "%20")
		if hasV {
			pairs[i] = k + "=" + strings.ReplaceAll(url.QueryEscape(v), "+", "%20")
		} else {
			pairs[i] = k
		}
	}
	return strings.Join(pairs, "&")
}

// checkSignature verifies a signed write: HMAC-SHA256 with the private key
// over "METHOD|URL|publicKey|timestamp", the timestamp within two minutes of
// now (api/README.md, The API; api/openapi.yaml describes the scheme).
func (s *Server) checkSignature(ctx context.Context, c *call) error {
	ts, tsFromHeader := c.authValue("Authenticate-Timestamp", "timestamp")
	if ts == "" {
		return coded(http.StatusBadRequest, codeMissingParam, fmt.Sprintf("Missing authentication timestamp: a write is signed; "+
			"send %s (or timestamp=), the UTC time as %s, and %s (or signature=)",
			c.header("Authenticate-Timestamp"), timestampForm, c.header("Authenticate-Signature")))
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if !timestampPattern.MatchString(ts) || err != nil {
		return coded(http.StatusBadRequest, codeInvalidTimestamp, fmt.Sprintf("Invalid timestamp: %s; want the UTC time as %s, such as %s",
			ts, timestampForm, s.now().UTC().Format("2006-01-02T15:04:05Z")))
	}
	if err := s.checkTimestamp(ts, t); err != nil {
		return err
	}
	sig, sigFromHeader := c.authValue("Authenticate-Signature", "signature")
	if sig == "" {
		return coded(http.StatusBadRequest, codeMissingParam, fmt.Sprintf("Missing authentication signature: send %s (or signature=), "+
			`the HMAC-SHA256 of "METHOD|URL|publicKey|timestamp" under the private key`, c.header("Authenticate-Signature")))
	}
	priv, err := s.privateKey(ctx, c)
	if err != nil {
		return err
	}
	var urls []string
	for _, u := range s.signatureCandidates(c, !tsFromHeader && !sigFromHeader) {
		urls = append(urls, u)
		data := c.method + "|" + u + "|" + c.publicKey + "|" + ts
		if equalMAC(sign(priv, data), sig) {
			c.w.Header().Set(c.header("AuthUrl"), u)
			return nil
		}
	}
	c.w.Header().Set(c.header("AuthUrl"), strings.Join(urls, ", "))
	return coded(http.StatusBadRequest, codeSignatureMismatch, fmt.Sprintf("Signature mismatch: the signature is not the HMAC-SHA256 "+
		`of "%s|URL|%s|%s" under the private key of %q for any URL in %s; sign the URL exactly as it is sent`,
		c.method, c.publicKey, ts, c.publicKey, c.header("AuthUrl")))
}

// checkTimestamp refuses a write timestamp more than signatureWindow from
// server time. The message starts with Imbo's phrase either way (its
// clients match on it and code 104) and then says which way it is off: a
// clock running ahead is not an old request.
func (s *Server) checkTimestamp(ts string, t time.Time) error {
	now, skew := s.now().UTC(), int(signatureWindow.Seconds())
	switch d := now.Sub(t); {
	case d > signatureWindow:
		return coded(http.StatusBadRequest, codeTimestampExpired, fmt.Sprintf(
			"Timestamp has expired: %s is more than %d seconds before the server's time, %s; sign with the current time",
			ts, skew, now.Format(time.RFC3339)))
	case d < -signatureWindow:
		return coded(http.StatusBadRequest, codeTimestampExpired, fmt.Sprintf(
			"Timestamp has expired: %s is in the future, more than %d seconds after the server's time, %s; check the client's clock",
			ts, skew, now.Format(time.RFC3339)))
	}
	return nil
}

// authValue reads an authentication value from the header (either prefix)
// or, failing that, the query parameter; fromHeader tells which.
func (c *call) authValue(header, param string) (v string, fromHeader bool) {
	for _, p := range []string{c.s.cfg.HeaderPrefix, "X-Service", "X-Imbo"} {
		if v := c.r.Header.Get(p + "-" + header); v != "" {
			return v, true
		}
	}
	return c.query.Get(param), false
}

var sigParams = regexp.MustCompile(`(^|[?&])(signature|timestamp)=[^&]*`)

// signatureCandidates lists the URLs a write may have been signed with: the
// URI with its query URL-decoded (the form Imbo clients sign) and as
// received.
// When the signature came in the query, its parameters are removed first.
func (s *Server) signatureCandidates(c *call, stripQuery bool) []string {
	path, decodedPath, rawQuery := requestTarget(c.r)
	clean := func(u string) string {
		if stripQuery {
			u = sigParams.ReplaceAllString(u, "$1")
			u = strings.NewReplacer("?&", "?", "&&", "&").Replace(u)
		}
		return strings.TrimRight(u, "&?")
	}
	var out []string
	for _, base := range s.bases(c) {
		out = append(out, clean(base+join(decodedPath, phpURLDecode(rawQuery))))
		if raw := clean(base + join(path, rawQuery)); raw != out[len(out)-1] {
			out = append(out, raw)
		}
	}
	return out
}
