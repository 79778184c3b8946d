package cdn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Purger asks a cache to drop what carries some tags.
type Purger interface {
	// Purge makes every object tagged with any of tags a miss at the
	// cache's next request for it. It returns once the cache accepted the
	// purge; an error says the purge may not have happened. Purging again
	// is harmless, so a caller retries until it succeeds. Tags beyond what
	// one request may carry go out in several requests (PurgerConfig.Batch).
	Purge(ctx context.Context, tags []string) error
	// Name names the purger in logs: its type and where it purges.
	Name() string
}

// Purger types, PurgerConfig.Type.
const (
	TypeVarnish    = "varnish"
	TypeFastly     = "fastly"
	TypeCloudflare = "cloudflare"
	TypeHTTP       = "http"
)

// DefaultTimeout bounds one purge request when PurgerConfig.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// PurgerConfig configures one purger, an entry of `cdn.purgers`.
type PurgerConfig struct {
	// Type is varnish, fastly, cloudflare or http.
	Type string `yaml:"type"`
	// URL is where purges go. varnish: a Varnish server's address
	// (http://varnish:6081/), required unless URLs is set; fastly and
	// cloudflare: the API's base (default https://api.fastly.com and
	// https://api.cloudflare.com/client/v4); http: the endpoint, required.
	URL string `yaml:"url"`
	// URLs are more Varnish servers, each purged (varnish only).
	URLs []string `yaml:"urls"`
	// ServiceID is the Fastly service (fastly, required).
	ServiceID string `yaml:"serviceID"`
	// ZoneID is the Cloudflare zone (cloudflare, required).
	ZoneID string `yaml:"zoneID"`
	// Token is the API token: Fastly-Key for fastly, a bearer token for
	// cloudflare (required for both) and for http (optional).
	Token string `yaml:"token"`
	// TokenEnv names an environment variable that holds the token instead
	// (ResolveToken reads it); not with Token.
	TokenEnv string `yaml:"tokenEnv"`
	// Headers are added to every purge request (a Host header for a
	// Varnish that routes on it, an authentication header for http).
	Headers map[string]string `yaml:"headers"`
	// Timeout bounds one purge request (default DefaultTimeout).
	Timeout time.Duration `yaml:"timeout"`
	// Batch is the most tags one request carries (defaults: varnish 20,
	// fastly 256, the most Fastly's API takes; cloudflare 100, the most
	// its purge API takes in one request; http 100).
	Batch int `yaml:"batch"`
	// Client sends the requests (default: one that follows no redirect).
	// Package main may hand it the outbound guard's client.
	Client *http.Client `yaml:"-"`
}

// defaultBatch is PurgerConfig.Batch's default per type, and fastlyMax
// the most keys Fastly's bulk purge takes (its API reference).
var defaultBatch = map[string]int{TypeVarnish: 20, TypeFastly: fastlyMax, TypeCloudflare: 100, TypeHTTP: 100}

const fastlyMax = 256

// ResolveToken sets Token from the environment variable TokenEnv names,
// through lookup (os.LookupEnv): an error when it is unset or empty.
func (c *PurgerConfig) ResolveToken(lookup func(string) (string, bool)) error {
	if c.TokenEnv == "" {
		return nil
	}
	if c.Token != "" {
		return fmt.Errorf("cdn: %s purger: token and tokenEnv are both set", c.Type)
	}
	v, ok := lookup(c.TokenEnv)
	if !ok || v == "" {
		return fmt.Errorf("cdn: %s purger: tokenEnv %s is not set", c.Type, c.TokenEnv)
	}
	c.Token = v
	return nil
}

// Validate reports what the purger's type needs and lacks, and settings
// out of range.
func (c PurgerConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("cdn: %s purger: "+format, append([]any{c.Type}, args...)...))
	}
	if _, ok := defaultBatch[c.Type]; !ok {
		return fmt.Errorf("cdn: purger type %q: want varnish, fastly, cloudflare or http", c.Type)
	}
	urls := c.URLs
	if c.URL != "" {
		urls = append([]string{c.URL}, urls...)
	}
	for _, u := range urls {
		if err := checkURL(u); err != nil {
			bad("url %q: %v", u, err)
		}
	}
	if len(c.URLs) > 0 && c.Type != TypeVarnish {
		bad("urls is for varnish only")
	}
	need := func(what, value string) {
		if value != "" {
			return
		}
		if what == "token" && c.TokenEnv != "" {
			bad("needs a token (tokenEnv %s was not read)", c.TokenEnv)
			return
		}
		bad("needs %s", what)
	}
	switch c.Type {
	case TypeVarnish:
		if len(urls) == 0 {
			bad("needs url")
		}
	case TypeFastly:
		need("serviceID", c.ServiceID)
		need("token", c.Token)
	case TypeCloudflare:
		need("zoneID", c.ZoneID)
		need("token", c.Token)
	case TypeHTTP:
		need("url", c.URL)
	}
	if c.ServiceID != "" && (c.Type != TypeFastly || strings.ContainsAny(c.ServiceID, "/?#% ")) {
		bad("serviceID %q: for fastly only, without '/', '?', '#', '%%' or spaces", c.ServiceID)
	}
	if c.ZoneID != "" && (c.Type != TypeCloudflare || strings.ContainsAny(c.ZoneID, "/?#% ")) {
		bad("zoneID %q: for cloudflare only, without '/', '?', '#', '%%' or spaces", c.ZoneID)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Headers)) {
		if name == "" || strings.Trim(name, tokenChars) != "" || strings.ContainsAny(c.Headers[name], "\r\n") {
			bad("header %q: not a header name, or a value with a line break", name)
		}
	}
	if c.Timeout < 0 {
		bad("timeout %s is negative", c.Timeout)
	}
	if c.Batch < 0 {
		bad("batch %d is negative", c.Batch)
	}
	if c.Type == TypeFastly && c.Batch > fastlyMax {
		bad("batch %d: Fastly takes at most %d keys a request", c.Batch, fastlyMax)
	}
	return errors.Join(errs...)
}

// checkURL accepts an absolute http or https URL with a host.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http:// or https:// URL with a host")
	}
	return nil
}

// redact is a URL for a log line: without a password.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}

// NewPurger validates c and builds its purger.
func NewPurger(c PurgerConfig) (Purger, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Batch == 0 {
		c.Batch = defaultBatch[c.Type]
	}
	if c.Client == nil {
		// A transport of its own: whoever closes the default transport's
		// idle connections (httptest servers do) breaks no purge under way.
		c.Client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	switch c.Type {
	case TypeVarnish:
		return newVarnish(c), nil
	case TypeFastly:
		return newFastly(c), nil
	case TypeCloudflare:
		return newCloudflare(c), nil
	}
	return newGeneric(c), nil
}

// batches cuts tags into runs of at most n, without empty tags or
// repeats.
func batches(tags []string, n int) [][]string {
	seen := make(map[string]bool, len(tags))
	var clean []string
	for _, t := range tags {
		if t != "" && !seen[t] {
			seen[t] = true
			clean = append(clean, t)
		}
	}
	return slices.Collect(slices.Chunk(clean, n))
}

// maxAnswer is how much of an answer is read; errQuote how much of it an
// error quotes.
const (
	maxAnswer = 64 << 10
	errQuote  = 256
)

// send makes one request with the configured headers and timeout; an
// answer other than 2xx is an error naming its status and quoting the
// start of its body. ok, when not nil, judges a 2xx answer's body.
func send(ctx context.Context, c PurgerConfig, req *http.Request, ok func(body []byte) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req = req.WithContext(ctx)
	for k, v := range c.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", req.Method, req.URL.Redacted(), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s %s: %s: %q", req.Method, req.URL.Redacted(), resp.Status, quote(body))
	}
	if ok != nil {
		if err := ok(body); err != nil {
			return fmt.Errorf("%s %s: %s: %w: %q", req.Method, req.URL.Redacted(), resp.Status, err, quote(body))
		}
	}
	return nil
}

// quote is the start of an answer's body, for an error.
func quote(body []byte) string {
	if len(body) > errQuote {
		body = body[:errQuote]
	}
	return strings.ToValidUTF8(string(body), "")
}
