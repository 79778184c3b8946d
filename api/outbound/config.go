package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// Defaults for the zero Config: what a webhook delivery needs. A caller
// that fetches images sets MaxBytes to its own upload cap.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultMaxBytes = 1 << 20
)

// Resolver looks a host name up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects to an address ("192.0.2.1:443", never a name); *net.Dialer
// is one.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Config configures a Guard. Its zero value refuses every address the
// ranges list, with the default caps and the system's resolver.
type Config struct {
	// Allow opens exactly what it names: CIDR ranges (10.1.0.0/16,
	// fd12::/64), single addresses (127.0.0.1, ::1) and host names
	// (hooks.internal: any address that name resolves to). A host name
	// matches only itself, case-insensitively, not its subdomains. IPv4
	// ranges are written in IPv4 form; they also open the IPv4-mapped and
	// NAT64 forms of their addresses.
	Allow []string `yaml:"allow"`
	// Timeout bounds a whole exchange, from the lookup to the last byte
	// read (default DefaultTimeout). Each caller sets its own.
	Timeout time.Duration `yaml:"-"`
	// MaxBytes caps a response body; reading past it fails with
	// ErrTooLarge (default DefaultMaxBytes). Each caller sets its own.
	MaxBytes int64 `yaml:"-"`
	// Resolver looks names up (default net.DefaultResolver).
	Resolver Resolver `yaml:"-"`
	// Dialer makes the connections, always to a checked address (default
	// a net.Dialer).
	Dialer Dialer `yaml:"-"`
}

// Validate checks the allowlist's entries and the caps.
func (c Config) Validate() error {
	_, err := parseAllow(c.Allow)
	if c.Timeout < 0 {
		err = errors.Join(err, fmt.Errorf("outbound: timeout %s is negative", c.Timeout))
	}
	if c.MaxBytes < 0 {
		err = errors.Join(err, fmt.Errorf("outbound: maxBytes %d is negative", c.MaxBytes))
	}
	return err
}

// allowlist is Config.Allow parsed.
type allowlist struct {
	prefixes []netip.Prefix
	hosts    map[string]bool
}

// parseAllow reads Config.Allow.
func parseAllow(list []string) (allowlist, error) {
	l := allowlist{hosts: map[string]bool{}}
	var errs []error
	for _, raw := range list {
		e := strings.TrimSpace(raw)
		p, err := parsePrefix(e)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("outbound.allow: %q: %w", raw, err))
		case p.IsValid():
			l.prefixes = append(l.prefixes, p)
		case validHost(e):
			l.hosts[canonicalHost(e)] = true
		default:
			errs = append(errs, fmt.Errorf("outbound.allow: %q is neither a CIDR range, an address nor a host name", raw))
		}
	}
	return l, errors.Join(errs...)
}

// parsePrefix reads a CIDR range or an address as a range of one; the zero
// Prefix and no error for what is neither (a host name, perhaps).
func parsePrefix(e string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(e)
	if err != nil {
		a, aerr := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(e, "["), "]"))
		if aerr != nil {
			return netip.Prefix{}, nil
		}
		if a.Zone() != "" {
			return netip.Prefix{}, errors.New("an address with a zone")
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() {
		// Why: the guard unmaps before it compares, so a mapped range would
		// never match; written in IPv4 form it opens both.
		return netip.Prefix{}, errors.New("write IPv4-mapped ranges in IPv4 form")
	}
	return p.Masked(), nil
}

// validHost reports whether h is a DNS host name: dot-separated labels of
// letters, digits and hyphens, neither starting nor ending with a hyphen,
// the last not all digits (so that 10.0.0.300 is no name).
func validHost(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 || strings.Trim(h[strings.LastIndexByte(h, '.')+1:], "0123456789") == "" {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// canonicalHost is h as the allowlist compares it: lower case, without the
// root's trailing dot.
func canonicalHost(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }

// contains reports whether the list opens a (unmapped, without zone).
func (l allowlist) contains(a netip.Addr) bool {
	for _, p := range l.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
