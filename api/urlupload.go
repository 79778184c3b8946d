package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/vitrine/vitrine/api/outbound"
)

// This file fetches the image of an upload that names a URL instead of
// carrying the bytes (api/README.md, Ingestion by URL): POST
// /users/<user>/images/url with the body {"url": "https://..."}, or the
// form that came before it, POST /users/<user>/images with
// `Content-Type: application/json` and that body.
// The image is fetched through the outbound guard, each redirect followed
// here and its target checked by the guard again, and its bytes then take
// the path of any upload (readUpload): the size cap and an upload token's
// policy, listeners, sniffing and decoding, analysis, storage.

const (
	// maxURLDocument caps the JSON document of an upload by URL.
	maxURLDocument = 16 << 10
	// maxURLLength caps the URL it names.
	maxURLLength = 8 << 10
	// maxRedirects is how many redirects a fetch follows.
	maxRedirects = 5
	// fetchUserAgent names vitrine to the origins it fetches from.
	fetchUserAgent = "vitrine-ingest/1"
)

// ingestGuard is the guard of uploads by URL: oc's allowlist, resolver and
// dialer with the caps of uploads (a whole fetch within URLTimeout, each
// connection within URLConnectTimeout, a response within the upload size
// limit).
func ingestGuard(cfg Config, oc outbound.Config) (*outbound.Guard, error) {
	oc.Timeout, oc.MaxBytes = cfg.Uploads.URLTimeout, cfg.Limits.MaxBodyBytes
	d := oc.Dialer
	if d == nil {
		d = &net.Dialer{}
	}
	oc.Dialer = connectTimeout{d: d, timeout: cfg.Uploads.URLConnectTimeout}
	return outbound.New(oc)
}

// connectTimeout bounds each connection its dialer makes.
type connectTimeout struct {
	d       outbound.Dialer
	timeout time.Duration
}

func (c connectTimeout) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.d.DialContext(ctx, network, address)
}

// uploadURL returns the URL an upload names instead of carrying an image:
// on the route of uploads by URL, the body is the document {"url": "..."};
// on the images route, so is the body of a request with Content-Type
// application/json that starts with `{` (after white space). ok is false
// for any other body, which is left to be read as the image (a client that
// labels an image application/json still uploads it).
func (c *call) uploadURL() (u *url.URL, ok bool, err error) {
	if !c.route.byURL && !c.jsonObjectBody() {
		return nil, false, nil
	}
	var doc struct {
		URL *string `json:"url"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(c.w, c.r.Body, maxURLDocument))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, true, errorf(http.StatusRequestEntityTooLarge, "Upload by URL: the JSON document is larger than %d bytes", maxURLDocument)
		}
		if errors.Is(err, io.EOF) {
			return nil, true, errorf(http.StatusBadRequest, `Upload by URL: the body is empty: want {"url": "https://..."}`)
		}
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			article := "a"
			if ute.Value != "" && strings.IndexByte("aeiou", ute.Value[0]) >= 0 {
				article = "an"
			}
			return nil, true, errorf(http.StatusBadRequest, "Upload by URL: url must be a string, not %s %s", article, ute.Value)
		}
		return nil, true, errorf(http.StatusBadRequest, `Upload by URL: want the JSON document {"url": "https://..."}: %s`, strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, true, errorf(http.StatusBadRequest, `Upload by URL: want the JSON document {"url": "https://..."} and nothing after it`)
	}
	if doc.URL == nil {
		return nil, true, errorf(http.StatusBadRequest, `Upload by URL: the document has no url: want {"url": "https://..."}`)
	}
	if u, err = checkSourceURL(*doc.URL); err != nil {
		return nil, true, err
	}
	return u, true, nil
}

// jsonObjectBody reports whether the request is labelled application/json
// and its body starts with `{`.
func (c *call) jsonObjectBody() bool {
	mt, _, err := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" || c.r.Body == nil {
		return false
	}
	br := bufio.NewReaderSize(c.r.Body, 512)
	// What is peeked is read again: a body that is no JSON object is the
	// image, from its first byte.
	c.r.Body = readCloser{br, c.r.Body}
	return startsObject(br)
}

// readCloser reads from its Reader and closes its Closer.
type readCloser struct {
	io.Reader
	io.Closer
}

// startsObject reports whether br starts with `{`, after at most a
// buffer's worth of white space.
func startsObject(br *bufio.Reader) bool {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if err != nil {
			return false
		}
		switch b[n-1] {
		case ' ', '\t', '\r', '\n':
		case '{':
			return true
		default:
			return false
		}
	}
}

// checkSourceURL checks the URL an upload names: absolute, http or
// https, with a host.
func checkSourceURL(raw string) (*url.URL, error) {
	if len(raw) > maxURLLength {
		return nil, errorf(http.StatusBadRequest, "Upload by URL: url is longer than %d bytes", maxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "Upload by URL: url is not a URL: %s", strings.TrimPrefix(err.Error(), "parse "))
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Hostname() == "" {
		return nil, errorf(http.StatusBadRequest, "Upload by URL: url %s is not an absolute http or https URL", redactURL(u))
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// redactURL is u without its user information, as messages and the audit
// log show it.
func redactURL(u *url.URL) string {
	r := *u
	r.User = nil
	return r.String()
}

// fetchImage fetches the image of an upload by URL, at most limit bytes,
// following at most maxRedirects redirects to http and https URLs; every
// connection goes through the guard, which checks each redirect's target
// as it did the first. Refusals are 400, a body over limit 413 (as soon
// as the stream passes it), an origin that answers other than 2xx or
// cannot be reached 502, one that runs out of time 504.
func (c *call) fetchImage(source *url.URL, limit int64) ([]byte, error) {
	if c.token == nil && !c.signed {
		// Why: a listener ordered before authentication asked for the
		// upload; no URL is fetched for a request not yet authenticated.
		return nil, errorf(http.StatusInternalServerError,
			"The image of an upload by URL is fetched only once the request is authenticated, and a listener asked for it before")
	}
	c.upload.source = redactURL(source)
	timeout := c.s.cfg.Uploads.URLTimeout
	ctx, cancel := context.WithTimeout(c.ctx(), timeout)
	defer cancel()
	client := c.s.ingest.Client()
	u, from := source, (*url.URL)(nil)
	seen := map[string]bool{u.String(): true}
	for redirects := 0; ; redirects++ {
		resp, err := fetchOnce(ctx, client, u)
		if err != nil {
			return nil, c.fetchError(ctx, err, u, from)
		}
		next, err := redirectOf(resp, u)
		if next == nil && err == nil {
			defer resp.Body.Close()
			return c.readFetched(ctx, resp, u, limit)
		}
		resp.Body.Close()
		switch {
		case err != nil:
			return nil, err
		case seen[next.String()]:
			return nil, errorf(http.StatusBadRequest, "Upload by URL: redirect loop: %s redirects back to %s", redactURL(u), redactURL(next))
		case redirects == maxRedirects:
			return nil, errorf(http.StatusBadRequest, "Upload by URL: too many redirects: %s was redirected more than %d times", c.upload.source, maxRedirects)
		}
		seen[next.String()] = true
		u, from = next, u
	}
}

// fetchOnce sends one GET of u through client, which follows no redirect.
func fetchOnce(ctx context.Context, client *http.Client, u *url.URL) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "image/*,*/*;q=0.8")
	req.Header.Set("User-Agent", fetchUserAgent)
	return client.Do(req)
}

// redirectOf returns where a redirect resp to u leads, nil when resp is no
// redirect, and an error for a redirect that cannot be followed: without
// a Location, or to another scheme than http and https.
func redirectOf(resp *http.Response, u *url.URL) (*url.URL, error) {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return nil, nil
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, errorf(http.StatusBadGateway, "Upload by URL: %s answered %s without a Location", redactURL(u), originStatus(resp))
	}
	next, err := u.Parse(loc)
	if err != nil {
		return nil, errorf(http.StatusBadGateway, "Upload by URL: %s redirects to an invalid URL", redactURL(u))
	}
	if next.Scheme != "http" && next.Scheme != "https" {
		return nil, errorf(http.StatusBadRequest, "Upload by URL: %s redirects to a %s: URL; only http and https are fetched", redactURL(u), next.Scheme)
	}
	if next.Hostname() == "" {
		return nil, errorf(http.StatusBadGateway, "Upload by URL: %s redirects to a URL without a host", redactURL(u))
	}
	next.Fragment, next.RawFragment = "", ""
	return next, nil
}

// readFetched reads the body of the final answer from u, at most limit
// bytes, stopping as soon as the stream passes the limit.
func (c *call) readFetched(ctx context.Context, resp *http.Response, u *url.URL, limit int64) ([]byte, error) {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, errorf(http.StatusBadGateway, "Upload by URL: %s answered %s", redactURL(u), originStatus(resp))
	}
	if resp.ContentLength > limit {
		return nil, c.tooLarge(u, limit)
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if errors.Is(err, outbound.ErrTooLarge) {
			return nil, c.tooLarge(u, limit)
		}
		return nil, c.fetchError(ctx, err, u, nil)
	}
	if n > limit {
		return nil, c.tooLarge(u, limit)
	}
	if n == 0 {
		return nil, coded(http.StatusUnsupportedMediaType, codeUnsupportedType,
			fmt.Sprintf("Unsupported image type: %s answered %s with an empty body", redactURL(u), originStatus(resp)))
	}
	return buf.Bytes(), nil
}

// originStatus is resp's status code and its standard text: the origin's own
// text is not repeated to the client.
func originStatus(resp *http.Response) string {
	return strings.TrimSpace(fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode)))
}

// tooLarge is the 413 of an image at u larger than limit.
func (c *call) tooLarge(u *url.URL, limit int64) error {
	return errorf(http.StatusRequestEntityTooLarge, "Upload by URL: the image at %s is larger than %d bytes, the limit", redactURL(u), limit)
}

// fetchError is the answer to a fetch of u (reached by a redirect from
// from, when not nil) within ctx that failed: the guard's refusal (400), a timeout
// (504), an origin that cannot be reached (502). Only the kind of a
// network failure is told, never the addresses a name resolved to.
func (c *call) fetchError(ctx context.Context, err error, u, from *url.URL) error {
	if c.ctx().Err() != nil {
		// The request itself ended (the client left, requestTimeout).
		return c.ctx().Err()
	}
	var refused *outbound.RefusedError
	if errors.As(err, &refused) {
		msg := refused.PublicMessage()
		if from != nil {
			msg += fmt.Sprintf(" (%s redirected to %s)", redactURL(from), redactURL(u))
		}
		return &Error{Status: http.StatusBadRequest, Msg: msg, err: err}
	}
	if errors.Is(err, outbound.ErrTooLarge) {
		return c.tooLarge(u, c.s.cfg.Limits.MaxBodyBytes)
	}
	host := u.Hostname()
	var op *net.OpError
	var dns *net.DNSError
	var ne net.Error
	var msg string
	switch {
	case ctx.Err() == nil && errors.As(err, &op) && op.Op == "dial" && op.Timeout():
		return &Error{Status: http.StatusGatewayTimeout, err: err, Msg: fmt.Sprintf(
			"Upload by URL: timed out connecting to %s (uploads.urlConnectTimeout is %s)", host, c.s.cfg.Uploads.URLConnectTimeout)}
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return &Error{Status: http.StatusGatewayTimeout, err: err, Msg: fmt.Sprintf(
			"Upload by URL: timed out fetching %s (uploads.urlTimeout is %s)", redactURL(u), c.s.cfg.Uploads.URLTimeout)}
	case errors.As(err, &dns) && dns.IsNotFound:
		msg = "no such host"
	case errors.As(err, &dns):
		msg = "the host name could not be resolved"
	case errors.Is(err, syscall.ECONNREFUSED):
		msg = "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		msg = "the connection was closed before the answer ended"
	case isTLSError(err):
		msg = "TLS failed (" + tlsReason(err) + ")"
	default:
		msg = "the connection failed"
	}
	return &Error{Status: http.StatusBadGateway, Msg: fmt.Sprintf("Upload by URL: could not fetch %s: %s", redactURL(u), msg), err: err}
}

// isTLSError reports whether err is a TLS handshake or certificate failure.
func isTLSError(err error) bool {
	var rec tls.RecordHeaderError
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	var alert tls.AlertError
	return errors.As(err, &rec) || errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) ||
		errors.As(err, &ci) || errors.As(err, &alert)
}

// tlsReason says what of TLS failed, in words that carry no address.
func tlsReason(err error) string {
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua):
		return "certificate signed by an unknown authority"
	case errors.As(err, &hn):
		return "certificate is not valid for the host"
	case errors.As(err, &ci):
		return "invalid certificate"
	}
	var rec tls.RecordHeaderError
	if errors.As(err, &rec) {
		return "the server does not speak TLS"
	}
	return "handshake failed"
}
