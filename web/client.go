package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vitrine/vitrine/api"
)

// apiClient is the signed-in key's view of the REST API, called in
// process. Each request is signed exactly as an outside client signs it
// (api.SignRead, api.SignWrite) and carries the browser's address and
// forwarding headers, so access control, address allow-lists and URL
// rebuilding treat it like the browser's own request.
type apiClient struct {
	h         http.Handler
	base      string // scheme://host as the browser reaches the service
	from      *http.Request
	pub, priv string
	now       func() time.Time
}

// client returns the API client of a session.
func (u *UI) client(r *http.Request, s Session) *apiClient {
	scheme, host := "http", r.Host
	if u.secure(r) {
		scheme = "https"
	}
	if h := r.Header.Get("X-Forwarded-Host"); h != "" && u.fromTrustedProxy(r) {
		host = strings.TrimSpace(strings.Split(h, ",")[0])
	}
	return &apiClient{h: u.api, base: scheme + "://" + host, from: r, pub: s.PublicKey, priv: s.PrivateKey, now: u.cfg.Now}
}

// apiError is a refusal or failure of the API, with its own message.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Message) }

// denied reports whether the API refused the key (rather than the input).
// The API answers access refusals with 400 Permission denied (as the
// protocol it implements does); the UI answers them with 403.
func (e *apiError) denied() bool {
	return e.Status == http.StatusForbidden || e.Status == http.StatusUnauthorized ||
		strings.HasPrefix(e.Message, "Permission denied") || strings.HasPrefix(e.Message, "Public key does not have access")
}

// formStatus is the status of a form shown again with the API's refusal:
// 403 when the key may not do it, 400 when the input was wrong.
func (e *apiError) formStatus() int {
	if e.denied() {
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// response is what the API answered.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// err returns the API's error for a 4xx or 5xx answer, nil otherwise.
func (r response) err() *apiError {
	if r.Status < 400 {
		return nil
	}
	var b api.ErrorBody
	if json.Unmarshal(r.Body, &b) == nil && b.Error.Message != "" {
		return &apiError{Status: r.Status, Message: b.Error.Message}
	}
	// A HEAD answer has no body; the message is in <prefix>-Error-Message.
	for k, v := range r.Header {
		if strings.HasSuffix(k, "-Error-Message") && len(v) > 0 {
			return &apiError{Status: r.Status, Message: v[0]}
		}
	}
	return &apiError{Status: r.Status, Message: http.StatusText(r.Status)}
}

// decode reads the API's JSON answer into v. An answer that is not the
// JSON the API documents (api/openapi.yaml) is the server's failure, not
// the user's: the error is one a page fails with (logged, 500), never an
// empty value that would make a wrong link.
func (r response) decode(v any) error {
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Errorf("web: the API's answer (%d) could not be read: %w", r.Status, err)
	}
	return nil
}

// target is the absolute URL of path with query q.
func (c *apiClient) target(path string, q url.Values) string {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// signedURL returns a URL the browser may GET on this key's behalf (an
// image, a thumbnail): it carries an access token valid for exactly it.
func (c *apiClient) signedURL(path string, q url.Values) string {
	s, err := api.SignRead(c.target(path, q), c.pub, c.priv)
	if err != nil {
		return ""
	}
	return s
}

// do sends one signed request to the API, asking for JSON.
func (c *apiClient) do(ctx context.Context, method, path string, q url.Values, body []byte, contentType string) (response, error) {
	return c.request(ctx, method, path, q, body, contentType, "application/json")
}

// headOriginal sends HEAD for an image without an Accept header, as a
// client fetching the original does: the API answers with the stored type
// and the headers it serves the original with.
func (c *apiClient) headOriginal(ctx context.Context, path string) (response, error) {
	return c.request(ctx, http.MethodHead, path, nil, nil, "", "")
}

// original GETs an image's stored bytes without an Accept header, as a
// client fetching the original does.
func (c *apiClient) original(ctx context.Context, path string) (response, error) {
	return c.request(ctx, http.MethodGet, path, nil, nil, "", "")
}

// request sends one signed request to the API; accept is the Accept
// header, none when empty; extra are further headers.
func (c *apiClient) request(ctx context.Context, method, path string, q url.Values, body []byte, contentType, accept string, extra ...api.HeaderField) (response, error) {
	raw := c.target(path, q)
	var hdr []api.HeaderField
	switch method {
	case http.MethodOptions:
		// A discovery (tus's OPTIONS), which is not signed.
	case http.MethodGet, http.MethodHead:
		s, err := api.SignRead(raw, c.pub, c.priv)
		if err != nil {
			return response{}, err
		}
		raw = s
	default:
		s, err := api.SignWrite(method, raw, c.pub, c.priv, c.now())
		if err != nil {
			return response{}, err
		}
		hdr = s.Headers()
	}
	req, err := http.NewRequestWithContext(ctx, method, raw, bytes.NewReader(body))
	if err != nil {
		return response{}, err
	}
	req.RequestURI = req.URL.RequestURI()
	req.RemoteAddr, req.TLS, req.Host = c.from.RemoteAddr, c.from.TLS, req.URL.Host
	for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Forwarded-Port"} {
		if v := c.from.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	for _, h := range append(hdr, extra...) {
		req.Header.Set(h.Name, h.Value)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	c.h.ServeHTTP(rec, req)
	return response{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}, nil
}

// getJSON reads path into v; an API refusal is an *apiError.
func (c *apiClient) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	r, err := c.do(ctx, http.MethodGet, path, q, nil, "")
	if err != nil {
		return err
	}
	if e := r.err(); e != nil {
		return e
	}
	return json.Unmarshal(r.Body, v)
}

// send writes body (JSON unless contentType says otherwise) with method;
// an API refusal is an *apiError.
func (c *apiClient) send(ctx context.Context, method, path string, body []byte, contentType string) (response, error) {
	if contentType == "" && body != nil {
		contentType = "application/json"
	}
	r, err := c.do(ctx, method, path, nil, body, contentType)
	if err != nil {
		return r, err
	}
	if e := r.err(); e != nil {
		return r, e
	}
	return r, nil
}

// sendIfMatch is send for a body made from what the API answered with
// etag: the API refuses it (412) when the resource changed since.
func (c *apiClient) sendIfMatch(ctx context.Context, method, path string, body []byte, etag string) (response, error) {
	r, err := c.request(ctx, method, path, nil, body, "application/json", "application/json",
		api.HeaderField{Name: "If-Match", Value: etag})
	if err != nil {
		return r, err
	}
	if e := r.err(); e != nil {
		return r, e
	}
	return r, nil
}

// recorder collects the API's answer in memory.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}

var _ io.Writer = (*recorder)(nil)
