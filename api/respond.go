package api

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Cache-Control values: none for private or changing answers, revalidated
// JSON, and a year for images, whose URL names their content.
const (
	cacheNone   = "max-age=0, no-store, private"
	cacheJSON   = "public, max-age=0, must-revalidate"
	cacheImages = "public, max-age=31536000"
)

// httpDate formats t as an HTTP-date in GMT.
func httpDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// out describes the headers of a successful response.
type out struct {
	status       int
	cache        string    // Cache-Control; "" for none
	etag         bool      // send ETag = md5 of the body
	lastModified time.Time // zero: none
}

var jsonpName = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$.]{0,127}$`)

// jsonp returns the JSONP function name requested, if any.
func (c *call) jsonp() (string, error) {
	for _, k := range []string{"callback", "jsonp", "json"} {
		if c.query.Has(k) {
			name := c.query.Get(k)
			if !jsonpName.MatchString(name) {
				return "", errorf(http.StatusBadRequest, "Invalid JSONP callback name")
			}
			return name, nil
		}
	}
	return "", nil
}

// negotiateJSON checks that the client accepts JSON (always, with a .json
// extension); 406 otherwise.
func (c *call) negotiateJSON() error {
	if c.ext == "json" {
		return nil
	}
	accept := c.r.Header.Get("Accept")
	if accept == "" {
		return nil
	}
	c.negotiated = true
	if acceptQuality(parseAccept(accept), "application/json") > 0 {
		return nil
	}
	return errorf(http.StatusNotAcceptable, "Not acceptable")
}

// writeJSON negotiates, encodes v, applies conditional-request headers and
// writes the response.
func (c *call) writeJSON(v any, o out) error {
	if err := c.negotiateJSON(); err != nil {
		return err
	}
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	name, err := c.jsonp()
	if err != nil {
		return err
	}
	if name != "" {
		body = append(append([]byte(name+"("), body...), ')')
	}
	return c.writeBody(body, "application/json", o)
}

// writeBody writes a body with the common headers; for GET and HEAD it
// answers 304 when the client's validators match.
func (c *call) writeBody(body []byte, contentType string, o out) error {
	h := c.w.Header()
	if o.status == 0 {
		o.status = http.StatusOK
	}
	read := c.method == http.MethodGet || c.method == http.MethodHead
	if o.cache != "" && read {
		h.Set("Cache-Control", o.cache)
	}
	var etag string
	if o.etag && read && o.status == http.StatusOK {
		sum := md5.Sum(body)
		etag = `"` + hex.EncodeToString(sum[:]) + `"`
		h.Set("ETag", etag)
	}
	if !o.lastModified.IsZero() && read && o.status == http.StatusOK {
		h.Set("Last-Modified", httpDate(o.lastModified))
	}
	c.commonHeaders()
	if read {
		c.setCacheTags()
	}
	if read && o.status == http.StatusOK && c.notModified(etag, o.lastModified) {
		h.Del("Content-Type")
		c.w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	c.w.WriteHeader(o.status)
	if c.method != http.MethodHead {
		_, _ = c.w.Write(body)
	}
	return nil
}

// commonHeaders sets Vary and the image identifier header.
func (c *call) commonHeaders() {
	h := c.w.Header()
	vary := c.header("PublicKey")
	if c.negotiated {
		vary = "Accept, " + vary
	}
	if c.varyOrigin {
		vary += ", Origin"
	}
	for _, hint := range c.varyHints {
		vary += ", " + hint
	}
	h.Set("Vary", vary)
	if id := c.params["image"]; id != "" && h.Get(c.header("ImageIdentifier")) == "" {
		h.Set(c.header("ImageIdentifier"), id)
	}
}

// notModified evaluates If-None-Match (which wins when present) and
// If-Modified-Since.
func (c *call) notModified(etag string, lastModified time.Time) bool {
	if inm := c.r.Header.Get("If-None-Match"); inm != "" {
		if etag == "" {
			return false
		}
		for _, t := range strings.Split(inm, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == "*" || t == etag {
				return true
			}
			// Some proxies append suffixes to ETags (`"<md5>-gzip"`).
			if len(t) > 34 && strings.HasPrefix(t, `"`) && strings.HasPrefix(etag, t[:33]) {
				return true
			}
		}
		return false
	}
	if ims := c.r.Header.Get("If-Modified-Since"); ims != "" && !lastModified.IsZero() {
		t, err := http.ParseTime(ims)
		return err == nil && !lastModified.Truncate(time.Second).After(t)
	}
	return false
}

// writeError writes err in the error model. Server errors are logged with
// their cause; clients see only the public message.
func (c *call) writeError(err error) {
	e := httpError(err)
	if e.Status >= 500 && e.Status != http.StatusNotImplemented {
		c.s.log.Error("request failed", "method", c.method, "path", c.r.URL.Path, "status", e.Status, "err", err)
	}
	if errors.Is(err, http.ErrAbortHandler) {
		panic(err)
	}
	h := c.w.Header()
	for _, k := range []string{"ETag", "Last-Modified", "Cache-Control", "Content-Length"} {
		h.Del(k)
	}
	for k, v := range e.Header {
		h[k] = v
	}
	now := httpDate(c.s.now())
	var b ErrorBody
	b.Error.Code, b.Error.Message, b.Error.Date, b.Error.ServiceErrorCode = e.Status, e.Msg, now, e.Code
	if c.params != nil && c.route != nil && c.route.name != "globalshorturl" {
		b.ImageIdentifier = c.params["image"]
	}
	h.Set(c.header("Error-Message"), e.Msg)
	h.Set(c.header("Error-InternalCode"), strconv.Itoa(e.Code))
	h.Set(c.header("Error-Date"), now)
	h.Set("Cache-Control", "no-store")
	body, _ := json.Marshal(b)
	if name, jerr := c.jsonp(); jerr == nil && name != "" {
		body = append(append([]byte(name+"("), body...), ')')
	}
	c.commonHeaders()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	status := e.Status
	if status == 499 {
		status = http.StatusBadRequest
	}
	c.w.WriteHeader(status)
	if c.method != http.MethodHead {
		_, _ = c.w.Write(body)
	}
}

// readJSON reads a small JSON body into v with Imbo's messages:
// `Missing JSON data` for an empty body, `Invalid JSON data` otherwise.
func (c *call) readJSON(limit int64, v any) error {
	data, err := readBody(c, limit)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return errorf(http.StatusBadRequest, "Missing JSON data")
	}
	// Why refuse rather than decode: encoding/json turns each invalid byte
	// into U+FFFD, and the stored document would differ from the one sent.
	if at := invalidUTF8(data); at >= 0 {
		return errorf(http.StatusBadRequest, "Invalid JSON data: the body is not UTF-8 (an invalid byte at offset %d)", at)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return errorf(http.StatusBadRequest, "Invalid JSON data")
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, "Invalid JSON data")
	}
	return nil
}

// invalidUTF8 is the offset of the first byte of data that is not valid
// UTF-8, or -1.
func invalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// readBody reads the request body up to limit bytes (413 above).
func readBody(c *call, limit int64) ([]byte, error) {
	if c.r.ContentLength > limit {
		// Why before reading: the client said how much it sends, so the
		// answer can name both numbers.
		return nil, errorf(http.StatusRequestEntityTooLarge, "Request body too large: %d bytes; the limit is %d bytes",
			c.r.ContentLength, limit)
	}
	body := http.MaxBytesReader(c.w, c.r.Body, limit)
	if c.r.ContentLength > 0 {
		// Why not bytes.Buffer: its ReadFrom, full, grows to twice the
		// size to look for the end; a body of a declared length is read
		// into exactly that (net/http fails a body that ends early).
		data := make([]byte, c.r.ContentLength)
		if _, err := io.ReadFull(body, data); err != nil {
			return nil, err
		}
		return data, nil
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(body); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
