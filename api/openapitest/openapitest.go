// Package openapitest checks HTTP exchanges against the API reference,
// api/openapi.yaml, so that the document cannot drift from the server. The
// api and e2e tests wrap their server (Handler) or client (Transport) with
// it; nothing outside tests imports it.
//
// The rules, for each exchange:
//
//   - A route (path and method) the document does not describe must have
//     been refused by the server with the JSON error body (404, 405, 418 or
//     501, or 429: a rate limit per client address counts a request before
//     it is routed); a route answered otherwise is a missing description.
//   - A request the document rejects (a parameter out of range, a body of
//     the wrong shape) must have been refused with a 4xx; tests send such
//     requests on purpose to check the refusal.
//   - Every response must match the document: a documented status (or the
//     default), its content type and body schema.
//   - Strictly: a request or response body field the document does not
//     describe is a mismatch even where the schema would allow more
//     properties, so every field a body carries is described (a map with
//     free keys says so with patternProperties). Headers and query
//     parameters are not held to that (see bodiesOnly).
//
// HEAD on a route described by its GET is checked as that GET without the
// response body; a `.json` suffix on the last segment is checked as the
// route without it; a CORS preflight (OPTIONS answered 204) is accepted on
// every documented path; a JSONP response's body is not a JSON document and is
// not checked. Security schemes are not checked here: the api tests check
// authentication themselves.
package openapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/vitrine/vitrine/api"
)

// Checker validates exchanges against the document. It is safe for
// concurrent use.
type Checker struct {
	mu    sync.Mutex
	v     validator.Validator
	model *v3.Document
	opts  *config.ValidationOptions
	// skip lists path prefixes that are not part of the API (the admin UI).
	skip []string
}

var (
	shared     *Checker
	sharedErr  error
	sharedOnce sync.Once
)

// New returns the Checker for api/openapi.yaml (built once per process);
// requests under the skip prefixes are not checked.
func New(skip ...string) (*Checker, error) {
	sharedOnce.Do(func() { shared, sharedErr = build() })
	if sharedErr != nil {
		return nil, sharedErr
	}
	return &Checker{v: shared.v, model: shared.model, opts: shared.opts, skip: skip}, nil
}

func build() (*Checker, error) {
	doc, err := libopenapi.NewDocument(api.OpenAPIYAML())
	if err != nil {
		return nil, fmt.Errorf("openapitest: parsing openapi.yaml: %w", err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("openapitest: building openapi.yaml: %w", err)
	}
	opts := []config.Option{config.WithoutSecurityValidation(), config.WithStrictMode()}
	v, errs := validator.NewValidator(doc, opts...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapitest: validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("openapitest: openapi.yaml is not a valid OpenAPI 3.1 document:%s", describe(verrs))
	}
	return &Checker{v: v, model: &model.Model, opts: config.NewValidationOptions(opts...)}, nil
}

// Exchange is one request and its response, bodies read.
type Exchange struct {
	Request      *http.Request
	RequestBody  []byte
	Status       int
	Header       http.Header
	ResponseBody []byte
}

// Check returns an error naming the route and every mismatch between the
// exchange and the document, or nil.
func (c *Checker) Check(x Exchange) error {
	r := x.Request
	for _, p := range c.skip {
		if strings.HasPrefix(r.URL.Path, p) {
			return nil
		}
	}
	req := x.Request.Clone(r.Context())
	req.URL.Path = strings.TrimSuffix(req.URL.Path, ".json")
	if r.URL.Path == "/openapi.json" {
		req.URL.Path = r.URL.Path
	}
	req.URL.RawPath = ""
	checkBody := true
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.Method == http.MethodHead && !c.hasOperation(req) {
		req.Method, checkBody = http.MethodGet, false
	}
	if jsonp(req) {
		checkBody = false
	}
	if req.Method == http.MethodOptions && x.Status == http.StatusNoContent && c.hasPath(req) {
		return nil // a CORS preflight, which every route answers (see the document's info)
	}
	if !c.hasOperation(req) {
		return c.undocumented(x)
	}
	var problems []*verrors.ValidationError
	req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	if ok, errs := c.v.ValidateHttpRequest(req); !ok && x.Status < 400 {
		problems = append(problems, bodiesOnly(errs)...)
	}
	if checkBody || x.Status == http.StatusNotModified {
		req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
		resp := &http.Response{StatusCode: x.Status, Header: x.Header, Request: req,
			Body: io.NopCloser(bytes.NewReader(x.ResponseBody))}
		if ok, errs := c.v.ValidateHttpResponse(req, resp); !ok {
			problems = append(problems, bodiesOnly(errs)...)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("openapi: %s %s answered %d, which api/openapi.yaml does not describe:%s",
			r.Method, r.URL.RequestURI(), x.Status, describe(problems))
	}
	return nil
}

// bodiesOnly drops strict mode's complaints about headers, query
// parameters and cookies the document does not list, keeping those about
// body properties. Why: request headers are read under configurable
// prefixes and Imbo's query forms (`t[0]`, `metadata[key]`, `accessToken`)
// are described in the document's info rather than per operation, while
// every body field must be described.
func bodiesOnly(errs []*verrors.ValidationError) []*verrors.ValidationError {
	out := errs[:0:0]
	for _, e := range errs {
		if e.ValidationType == verrors.StrictValidationType {
			switch e.ValidationSubType {
			case verrors.StrictSubTypeHeader, verrors.StrictSubTypeQuery, verrors.StrictSubTypeCookie:
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// hasOperation reports whether the document describes the request's path
// and method.
func (c *Checker) hasOperation(req *http.Request) bool {
	// Why a literal path first: the validator prefers /filters/reload to
	// /filters/{filter}, as the server does, and FindPath may not.
	if item, ok := c.model.Paths.PathItems.Get(req.URL.Path); ok {
		return helpers.ExtractOperation(req, item) != nil
	}
	item, errs, _ := paths.FindPath(req, c.model, c.opts)
	return item != nil && len(errs) == 0 && helpers.ExtractOperation(req, item) != nil
}

// hasPath reports whether the document describes the request's path.
func (c *Checker) hasPath(req *http.Request) bool {
	g := req.Clone(req.Context())
	g.Method = http.MethodGet
	item, _, _ := paths.FindPath(g, c.model, c.opts)
	return item != nil
}

// undocumented accepts a route the document does not describe only when
// the server refused it with the JSON error body.
func (c *Checker) undocumented(x Exchange) error {
	r := x.Request
	switch x.Status {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusTeapot, http.StatusNotImplemented,
		http.StatusTooManyRequests:
	default:
		return fmt.Errorf("openapi: %s %s answered %d but api/openapi.yaml does not describe this route",
			r.Method, r.URL.Path, x.Status)
	}
	if r.Method == http.MethodHead {
		return nil
	}
	var body struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(x.ResponseBody, &body); err != nil || body.Error == nil || body.Error.Code != x.Status {
		return fmt.Errorf("openapi: %s %s answered %d without the JSON error body: %.200q",
			r.Method, r.URL.Path, x.Status, x.ResponseBody)
	}
	return nil
}

// jsonp reports whether the request asks for a JSONP response.
func jsonp(r *http.Request) bool {
	q := r.URL.Query()
	return q.Has("callback") || q.Has("jsonp") || q.Has("json")
}

func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n\t%s: %s", e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n\t\t%s: %s", se.FieldPath, se.Reason)
		}
		if e.SpecLine > 0 {
			fmt.Fprintf(&b, " (openapi.yaml line %d)", e.SpecLine)
		}
	}
	return b.String()
}

// Handler wraps h so that every exchange it serves is checked; a mismatch
// fails tb.
func (c *Checker) Handler(tb testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		x := Exchange{Request: r, RequestBody: body, Status: rec.Code, Header: rec.Header(), ResponseBody: rec.Body.Bytes()}
		if err := c.Check(x); err != nil {
			tb.Error(err)
		}
	})
}

// Transport wraps rt (http.DefaultTransport when nil) so that every
// exchange is checked; a mismatch is returned as the request's error.
func (c *Checker) Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripper{c: c, rt: rt}
}

type roundTripper struct {
	c  *Checker
	rt http.RoundTripper
}

func (t roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, fmt.Errorf("openapitest: reading the request body: %w", err)
		}
		_ = r.Body.Close()
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := t.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	rbody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("openapitest: reading the response body: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(rbody))
	x := Exchange{Request: r, RequestBody: body, Status: resp.StatusCode, Header: resp.Header, ResponseBody: rbody}
	if err := t.c.Check(x); err != nil {
		return nil, err
	}
	return resp, nil
}
