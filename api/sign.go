package api

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// This file is the client side of auth.go: what a request needs to pass
// authentication, computed exactly as checkAccessToken and checkSignature
// verify it. `vitrine sign` prints it; any Go client may call it.
//
// Every function takes an absolute http:// or https:// URL as the request
// will be sent, without a fragment and not signed already.

// CanonicalURL is the form of rawURL that access tokens and signatures
// cover, the one the service rebuilds to check them: scheme and host
// (without a default port, which curl leaves out of Host), the path and the
// query URL-decoded (`+` is a space), without trailing `?` or `&`.
func CanonicalURL(rawURL string) (string, error) {
	t, err := parseSignTarget(rawURL)
	if err != nil {
		return "", err
	}
	return t.signed(), nil
}

// SignURLUser checks that rawURL can be signed and returns the <user> of
// its /users/<user>/... path, "" when the path has none. A key named like
// that user needs no `publicKey` in the URL.
func SignURLUser(rawURL string) (string, error) {
	t, err := parseSignTarget(rawURL)
	if err != nil {
		return "", err
	}
	return t.user, nil
}

// SignRead returns rawURL (percent-encoded where a client could not send it
// as it is) with the `accessToken` a GET or HEAD needs: the
// HMAC-SHA256 of its canonical form (CanonicalURL) under privateKey. When
// publicKey is not named like the path user, or the path has no user,
// `publicKey` is added to the query first (and signed with it); a URL that
// already names another publicKey is an error.
func SignRead(rawURL, publicKey, privateKey string) (string, error) {
	t, err := parseSignTarget(rawURL)
	if err != nil {
		return "", err
	}
	if t, err = t.withPublicKey(publicKey); err != nil {
		return "", err
	}
	return t.appendParam("accessToken", sign(privateKey, t.signed())), nil
}

// WriteSignature authenticates a write (POST, PUT or DELETE) sent to the
// URL it was computed for.
type WriteSignature struct {
	// URL is where to send the write: the URL given, percent-encoded where
	// a client could not send it as it is (a space, `[]`).
	URL       string
	PublicKey string
	// Timestamp is the signing time in UTC, 2006-01-02T15:04:05Z; the
	// service accepts it for two minutes either way.
	Timestamp string
	// Signature is the hex HMAC-SHA256 of METHOD|URL|publicKey|timestamp,
	// URL in its canonical form.
	Signature string
}

// HeaderField is one request header.
type HeaderField struct{ Name, Value string }

// Headers are the request headers that carry s: X-Service-PublicKey,
// X-Service-Authenticate-Timestamp and X-Service-Authenticate-Signature, in
// that order.
func (s WriteSignature) Headers() []HeaderField {
	return []HeaderField{{"X-Service-PublicKey", s.PublicKey}, {"X-Service-Authenticate-Timestamp", s.Timestamp},
		{"X-Service-Authenticate-Signature", s.Signature}}
}

// SignWrite signs a write of method (POST, PUT, PATCH or DELETE, upper case) to
// rawURL as publicKey at time now, to be sent to s.URL with s.Headers().
func SignWrite(method, rawURL, publicKey, privateKey string, now time.Time) (WriteSignature, error) {
	t, err := parseSignTarget(rawURL)
	if err != nil {
		return WriteSignature{}, err
	}
	return t.signWrite(method, publicKey, privateKey, now)
}

// SignWriteQuery is SignWrite for a client that cannot send headers: it
// returns rawURL with `signature` and `timestamp` parameters, and with
// `publicKey` added first as SignRead does.
func SignWriteQuery(method, rawURL, publicKey, privateKey string, now time.Time) (string, error) {
	t, err := parseSignTarget(rawURL)
	if err != nil {
		return "", err
	}
	if t, err = t.withPublicKey(publicKey); err != nil {
		return "", err
	}
	s, err := t.signWrite(method, publicKey, privateKey, now)
	if err != nil {
		return "", err
	}
	return t.appendParam("signature", s.Signature) + "&timestamp=" + url.QueryEscape(s.Timestamp), nil
}

// signTarget is a request URL as given, with what signing needs from it.
type signTarget struct {
	raw  string
	u    *url.URL
	user string // the <user> of /users/<user>/..., "" when the path has none
}

var signUserPath = regexp.MustCompile(`^/users/([^/.]+)`)

func parseSignTarget(raw string) (*signTarget, error) {
	if strings.Contains(raw, "#") {
		return nil, fmt.Errorf("%q has a fragment, which is never sent", raw)
	}
	raw = escapeRequestTarget(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("want an absolute http:// or https:// URL, got %q", raw)
	}
	if u.Query().Has("accessToken") || u.Query().Has("signature") {
		return nil, fmt.Errorf("%q is signed already", raw)
	}
	t := &signTarget{raw: raw, u: u}
	if m := signUserPath.FindStringSubmatch(u.Path); m != nil {
		t.user = m[1]
	}
	return t, nil
}

// escapeRequestTarget percent-encodes what follows the host of raw where
// a byte may not appear in a URL as sent (a space, `[`, `]`, `"`, a
// non-ASCII byte, a `%` that starts no escape), so that curl and other
// clients send the URL as printed; escapes already there, `+` and the
// delimiters are kept. The service decodes the query before it checks a
// token (CanonicalURL), so the encoded URL signs as the plain one does.
func escapeRequestTarget(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	slash := strings.IndexAny(rest, "/?")
	if slash < 0 {
		return raw
	}
	var b strings.Builder
	b.WriteString(scheme + "://" + rest[:slash])
	target := rest[slash:]
	for i := 0; i < len(target); i++ {
		c := target[i]
		if c == '%' && i+2 < len(target) && isHex(target[i+1]) && isHex(target[i+2]) || keptInURL(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// keptInURL reports whether c may appear unescaped in a URL's path and
// query: RFC 3986's unreserved and reserved characters, less `[` and `]`
// (curl reads those as a glob, the shell as a pattern) and `#`.
func keptInURL(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/?", c) >= 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// signed is the canonical form of the URL (CanonicalURL).
func (t *signTarget) signed() string {
	host := t.u.Host
	if p := t.u.Port(); (t.u.Scheme == "http" && p == "80") || (t.u.Scheme == "https" && p == "443") {
		host = strings.TrimSuffix(host, ":"+p)
	}
	path := t.u.Path
	if path == "" {
		path = "/"
	}
	return strings.TrimRight(t.u.Scheme+"://"+host+join(path, phpURLDecode(t.u.RawQuery)), "&?")
}

// withPublicKey adds `publicKey` to the query when the key is not named
// like the path user, which is how the service learns it without a header.
func (t *signTarget) withPublicKey(publicKey string) (*signTarget, error) {
	switch q := t.u.Query().Get("publicKey"); {
	case q == publicKey:
		return t, nil
	case q != "":
		return nil, fmt.Errorf("the URL names publicKey %q, not %q", q, publicKey)
	case publicKey == t.user:
		return t, nil
	}
	return parseSignTarget(t.appendParam("publicKey", publicKey))
}

// appendParam returns the raw URL with one more query parameter.
func (t *signTarget) appendParam(name, value string) string {
	sep := "&"
	switch {
	case !strings.Contains(t.raw, "?"):
		sep = "?"
	case strings.HasSuffix(t.raw, "?") || strings.HasSuffix(t.raw, "&"):
		sep = ""
	}
	return t.raw + sep + name + "=" + url.QueryEscape(value)
}

// signWrite signs METHOD|URL|publicKey|timestamp over the URL as t has it.
func (t *signTarget) signWrite(method, publicKey, privateKey string, now time.Time) (WriteSignature, error) {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch:
	case http.MethodHead: // a resumable upload's HEAD is signed as its PATCHes are
	default:
		return WriteSignature{}, fmt.Errorf("unsupported method %q: writes are POST, PUT, PATCH or DELETE (and HEAD of a resumable upload)", method)
	}
	ts := now.UTC().Format("2006-01-02T15:04:05Z")
	return WriteSignature{URL: t.raw, PublicKey: publicKey, Timestamp: ts,
		Signature: sign(privateKey, method+"|"+t.signed()+"|"+publicKey+"|"+ts)}, nil
}
