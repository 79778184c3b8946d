package api

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/vitrine/vitrine/api/cdn"
	"github.com/vitrine/vitrine/storage"
)

// Config is the api part of the service configuration. Its zero value is
// usable after Defaults: loopback-only stats, X-Service headers, images
// converted by content negotiation.
type Config struct {
	// HeaderPrefix names response headers (`X-Service-OriginalWidth`...).
	// Set it to `X-Imbo` to serve existing Imbo clients. Default `X-Service`.
	HeaderPrefix string `yaml:"headerPrefix"`
	// ContentNegotiateImages converts images to the type the Accept header
	// prefers. When false, images are only converted when an extension asks.
	// Default true.
	ContentNegotiateImages *bool `yaml:"contentNegotiateImages"`
	// IndexRedirect, when set, makes GET / answer 307 to this URL.
	IndexRedirect string `yaml:"indexRedirect"`
	// StatsAllow lists client addresses or CIDR ranges allowed to read
	// /stats; `*` allows everyone. Default loopback only.
	StatsAllow []string `yaml:"statsAllow"`
	// TrustedProxies lists proxy addresses or CIDR ranges whose
	// X-Forwarded-For/-Proto/-Host headers are believed.
	TrustedProxies []string `yaml:"trustedProxies"`
	// Authentication configures how signed URLs are rebuilt.
	Authentication Authentication `yaml:"authentication"`
	// AccessControl holds the keys, groups and rules.
	AccessControl AccessControl `yaml:"accessControl"`
	// Limits caps request sizes. The configuration file keeps them in its
	// `limits` section, which api shares with engine's image limits, so
	// main composes that section rather than this field.
	Limits Limits `yaml:"-"`
	// CORS configures cross-origin access; off by default.
	CORS CORS `yaml:"cors"`
	// Uploads configures upload tokens. The configuration file keeps it
	// in its `uploads` section, which api shares with engine's accepted
	// formats, so main composes that section rather than this field.
	Uploads Uploads `yaml:"-"`
	// CacheVariants stores transformed images in the blob store so repeated
	// requests skip the work. Default true.
	CacheVariants *bool `yaml:"cacheVariants"`
	// Analysis configures what uploads learn about themselves (EXIF into
	// metadata, placeholders, colours, perceptual hash).
	Analysis Analysis `yaml:"analysis"`
	// ClientHints configures responsive sizes by client hints
	// (clienthints.go); off by default.
	ClientHints ClientHints `yaml:"clientHints"`
	// CDN names the cache tags of image, metadata, short URL and listing
	// answers and the headers that carry them (api/cdn/README.md, "CDN"); the zero
	// value is the defaults. The configuration file keeps it in its `cdn`
	// section beside the purgers, so main composes it rather than this
	// field.
	CDN cdn.Tags `yaml:"-"`
}

// Authentication configures URL reconstruction for tokens and signatures.
type Authentication struct {
	// Protocol is `incoming` (the scheme as received, the default), `http`,
	// `https` (force one, for TLS-terminating load balancers) or `both`.
	Protocol string `yaml:"protocol"`
}

// Limits caps what one request may carry.
type Limits struct {
	// MaxBodyBytes caps upload bodies (413 above). Default 64 MiB.
	MaxBodyBytes int64 `yaml:"maxBodyBytes"`
	// MaxMetadataBytes caps a metadata document (400 above). Default 64 KiB.
	MaxMetadataBytes int64 `yaml:"maxMetadataBytes"`
	// MaxMetadataDepth caps metadata nesting (400 above). Default 16.
	MaxMetadataDepth int `yaml:"maxMetadataDepth"`
}

// Uploads configures upload tokens (api/README.md, Upload tokens) and ingestion
// by URL (api/README.md, Ingestion by URL).
type Uploads struct {
	// TokenMaxTTL caps the life of an upload token: a request for a longer
	// one is refused (400). Default 24h.
	TokenMaxTTL time.Duration `yaml:"tokenMaxTTL"`
	// URLTimeout bounds the whole fetch of an image named by URL, from the
	// first lookup through every redirect to the last byte (504 past it).
	// Default 30s.
	URLTimeout time.Duration `yaml:"urlTimeout"`
	// URLConnectTimeout bounds each connection such a fetch opens (504
	// past it). Default 10s, and never more than URLTimeout.
	URLConnectTimeout time.Duration `yaml:"urlConnectTimeout"`
	// StagingDir, when set, is a local folder that keeps the parts of
	// resumable uploads (api/README.md, Resumable uploads); unset, they are kept
	// in the blob store, where every instance sharing it can resume them.
	// Read by main, which opens the folder.
	StagingDir string `yaml:"stagingDir"`
	// ResumableTTL is how long an incomplete resumable upload is kept
	// after it was created (Upload-Expires); then its parts are deleted.
	// Default 24h.
	ResumableTTL time.Duration `yaml:"resumableTTL"`
	// FinishedTTL is how long a resumable upload that was stored as an
	// image still answers HEAD and PATCH with the image's identifier, for
	// a client that lost the last answer. Default 1h.
	FinishedTTL time.Duration `yaml:"finishedTTL"`
	// PartSize is the size of the parts a resumable upload is stored in:
	// a server killed in the middle of a PATCH loses at most one. Default
	// 8 MiB; at least 64 KiB.
	PartSize int64 `yaml:"partSize"`
}

// Defaults of Uploads' fields left unset.
const (
	DefaultTokenMaxTTL       = 24 * time.Hour
	DefaultURLTimeout        = 30 * time.Second
	DefaultURLConnectTimeout = 10 * time.Second
	DefaultResumableTTL      = 24 * time.Hour
	DefaultFinishedTTL       = time.Hour
	DefaultPartSize          = 8 << 20
	minPartSize              = 64 << 10
)

// Validate reports a setting out of range; zero means the default.
func (u Uploads) Validate() error {
	if u.TokenMaxTTL != 0 && u.TokenMaxTTL < time.Second {
		return fmt.Errorf("uploads.tokenMaxTTL: want at least 1s, got %s", u.TokenMaxTTL)
	}
	if u.URLTimeout < 0 {
		return fmt.Errorf("uploads.urlTimeout: want a positive duration, got %s", u.URLTimeout)
	}
	if u.URLConnectTimeout < 0 {
		return fmt.Errorf("uploads.urlConnectTimeout: want a positive duration, got %s", u.URLConnectTimeout)
	}
	if u.ResumableTTL != 0 && u.ResumableTTL < time.Minute {
		return fmt.Errorf("uploads.resumableTTL: want at least 1m, got %s", u.ResumableTTL)
	}
	if u.FinishedTTL < 0 {
		return fmt.Errorf("uploads.finishedTTL: want a positive duration, got %s", u.FinishedTTL)
	}
	if u.PartSize != 0 && u.PartSize < minPartSize {
		return fmt.Errorf("uploads.partSize: want at least %d bytes, got %d", minPartSize, u.PartSize)
	}
	return nil
}

// defaults fills unset fields.
func (u *Uploads) defaults() {
	if u.TokenMaxTTL == 0 {
		u.TokenMaxTTL = DefaultTokenMaxTTL
	}
	if u.URLTimeout == 0 {
		u.URLTimeout = DefaultURLTimeout
	}
	if u.URLConnectTimeout == 0 {
		u.URLConnectTimeout = DefaultURLConnectTimeout
	}
	u.URLConnectTimeout = min(u.URLConnectTimeout, u.URLTimeout)
	if u.ResumableTTL == 0 {
		u.ResumableTTL = DefaultResumableTTL
	}
	if u.FinishedTTL == 0 {
		u.FinishedTTL = DefaultFinishedTTL
	}
	if u.PartSize == 0 {
		u.PartSize = DefaultPartSize
	}
}

// AccessControl is the configured (immutable) part of access control.
type AccessControl struct {
	// Keys are public/private key pairs with their rules.
	Keys []ConfigKey `yaml:"keys"`
	// Groups maps group names to resource lists, beside the built-in
	// `read-only`, `read-write` and `all`.
	Groups map[string][]string `yaml:"groups"`
	// Database enables keys, groups and rules managed through the API and
	// stored in the database, beside the configured ones. A configuration
	// file starts from FileDefaults, where it is on; `false` keeps access
	// control read-only.
	Database bool `yaml:"database"`
}

// FileDefaults returns the Config a configuration file is read into: the
// defaults a file may turn off, which a zero value cannot hold. Access
// control is stored in the database and changes through the API
// (accessControl.database), so that the admin key created on first start
// can create keys.
func FileDefaults() Config {
	return Config{AccessControl: AccessControl{Database: true}}
}

// ConfigKey is one configured key pair.
type ConfigKey struct {
	// PublicKey names the key (1-64 of a-z A-Z 0-9 _ -).
	PublicKey string `yaml:"publicKey"`
	// PrivateKey signs the key's requests.
	PrivateKey string `yaml:"privateKey"`
	// Rules grant the key resources on users, each checked as
	// ValidateRule checks one.
	Rules []ConfigRule `yaml:"rules"`
}

// ConfigRule grants resources (or a group) on users. Users is a list or the
// string `*`.
type ConfigRule struct {
	// Users the rule applies to, or `*` for every user.
	Users Users `yaml:"users"`
	// Resources the rule grants (see Resources), instead of Group.
	Resources []string `yaml:"resources"`
	// Group names the resources the rule grants, instead of Resources.
	Group string `yaml:"group"`
}

// Users is a list of user names; the YAML string `*` means every user.
type Users []string

// UnmarshalYAML accepts a list or the string `*`.
func (u *Users) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err == nil {
		if s != "*" {
			return fmt.Errorf("users: want a list or \"*\", got %q", s)
		}
		*u = Users{"*"}
		return nil
	}
	var l []string
	if err := unmarshal(&l); err != nil {
		return err
	}
	*u = l
	return nil
}

// namePattern is what user names and public keys look like.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidName reports whether s is a valid user name or public key.
func ValidName(s string) bool { return namePattern.MatchString(s) }

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// Defaults fills unset fields.
func (c *Config) Defaults() {
	if c.HeaderPrefix == "" {
		c.HeaderPrefix = "X-Service"
	}
	c.HeaderPrefix = strings.TrimSuffix(c.HeaderPrefix, "-")
	if c.StatsAllow == nil {
		c.StatsAllow = []string{"127.0.0.1", "::1"}
	}
	if c.Authentication.Protocol == "" {
		c.Authentication.Protocol = "incoming"
	}
	c.Limits.defaults()
	c.Uploads.defaults()
	c.CORS.defaults()
	c.Analysis.defaults()
	c.ClientHints.defaults()
}

// defaults fills unset limits.
func (l *Limits) defaults() {
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = 64 << 20
	}
	if l.MaxMetadataBytes == 0 {
		l.MaxMetadataBytes = 64 << 10
	}
	if l.MaxMetadataDepth == 0 {
		l.MaxMetadataDepth = 16
	}
}

// Validate reports the first configuration problem.
func (c *Config) Validate() error {
	switch c.Authentication.Protocol {
	case "incoming", "http", "https", "both":
	default:
		return fmt.Errorf("authentication.protocol: want incoming, http, https or both, got %q", c.Authentication.Protocol)
	}
	for _, list := range [][]string{c.StatsAllow, c.TrustedProxies} {
		for _, a := range list {
			if a == "*" {
				continue
			}
			if _, err := parsePrefix(a); err != nil {
				return fmt.Errorf("address %q: %w", a, err)
			}
		}
	}
	if err := c.Analysis.validate(); err != nil {
		return err
	}
	if err := c.ClientHints.validate(); err != nil {
		return err
	}
	if err := c.CDN.Validate(); err != nil {
		return err
	}
	if err := c.Uploads.Validate(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, k := range c.AccessControl.Keys {
		if !namePattern.MatchString(k.PublicKey) {
			return fmt.Errorf("accessControl.keys[%d]: invalid publicKey %q", i, k.PublicKey)
		}
		if k.PrivateKey == "" {
			return fmt.Errorf("accessControl.keys[%d] (%s): privateKey is empty", i, k.PublicKey)
		}
		if seen[k.PublicKey] {
			return fmt.Errorf("accessControl.keys: %s is defined twice", k.PublicKey)
		}
		seen[k.PublicKey] = true
		for j, r := range k.Rules {
			rule := storage.Rule{Group: r.Group, Resources: r.Resources, Users: r.Users}
			if err := ValidateRule(context.Background(), rule, c.groupExists); err != nil {
				return fmt.Errorf("accessControl.keys[%d].rules[%d]: %s", i, j, publicMessage(err))
			}
		}
	}
	return nil
}

// groupExists is the GroupExists of the configuration: built-in and
// configured groups.
func (c *Config) groupExists(_ context.Context, name string) (bool, error) {
	_, builtin := builtinGroups[name]
	_, configured := c.AccessControl.Groups[name]
	return builtin || configured, nil
}

// publicMessage is the message of an *Error, or err's text.
func publicMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return err.Error()
}

// parsePrefix reads an address or CIDR range.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}
