package outbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"
)

// Guard makes outbound connections only to addresses that pass Check (or
// that an allowed host name resolves to). It is safe for concurrent use;
// its HTTP clients share one pool of connections.
type Guard struct {
	allow     allowlist
	timeout   time.Duration
	maxBytes  int64
	resolver  Resolver
	dialer    Dialer
	transport *capped
}

// New validates c and builds its Guard.
func New(c Config) (*Guard, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	allow, _ := parseAllow(c.Allow)
	g := &Guard{allow: allow, timeout: c.Timeout, maxBytes: c.MaxBytes, resolver: c.Resolver, dialer: c.Dialer}
	if g.timeout == 0 {
		g.timeout = DefaultTimeout
	}
	if g.maxBytes == 0 {
		g.maxBytes = DefaultMaxBytes
	}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	if g.dialer == nil {
		g.dialer = &net.Dialer{}
	}
	g.transport = &capped{max: g.maxBytes, rt: &http.Transport{
		// Why no Proxy: a proxy would make the connection, to an address
		// the guard never saw.
		Proxy:                  nil,
		DialContext:            g.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    g.timeout,
		ResponseHeaderTimeout:  g.timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}}
	return g, nil
}

// Client returns an HTTP client whose every connection goes through the
// guard. It follows no redirect: a 3xx response is returned as it is, its
// Location for the caller to judge (a caller that follows one makes a new
// request, which the guard checks again). A request's whole exchange is
// bounded by Config.Timeout, and its response body by Config.MaxBytes.
func (g *Guard) Client() *http.Client {
	return &http.Client{
		Transport:     g.transport,
		Timeout:       g.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// DialContext connects to address ("host:port") the guarded way: it
// resolves host (an address literal is its own answer), refuses the
// connection when any address it resolves to fails Check, unless host is
// on the allowlist by name, and dials the checked addresses in turn, never
// the name. Refusals match ErrRefused. Without a deadline in ctx, the
// lookup and the dial together are bounded by Config.Timeout.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("outbound: %w", err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("outbound: port %q of %s: %w", portText, address, err)
	}
	addrs, err := g.resolve(ctx, network, host)
	if err != nil {
		return nil, err
	}
	if !g.allow.hosts[canonicalHost(host)] {
		for _, a := range addrs {
			if e := g.check(a); e != nil {
				e.Host = host
				return nil, e
			}
		}
	}
	var errs []error
	for _, a := range addrs {
		// Why the unmapped form: it is the address that was checked.
		ap := netip.AddrPortFrom(a.WithZone("").Unmap(), uint16(port))
		conn, err := g.dialer.DialContext(ctx, network, ap.String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("outbound: dial %s: %w", host, errors.Join(errs...))
}

// resolve returns the addresses of host: itself when it is an address, the
// resolver's answer for network's family otherwise.
func (g *Guard) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	family := "ip"
	switch network {
	case "tcp4", "udp4":
		family = "ip4"
	case "tcp6", "udp6":
		family = "ip6"
	}
	addrs, err := g.resolver.LookupNetIP(ctx, family, host)
	if err != nil {
		return nil, fmt.Errorf("outbound: resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("outbound: resolve %s: no addresses", host)
	}
	return addrs, nil
}

// capped is the guard's round tripper: the transport, with response bodies
// capped.
type capped struct {
	rt  *http.Transport
	max int64
}

// RoundTrip fails at once with ErrTooLarge when the response announces a
// body over the cap, and otherwise lets its body be read up to the cap.
func (c *capped) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > c.max && req.Method != http.MethodHead {
		resp.Body.Close()
		return nil, &TooLargeError{Limit: c.max}
	}
	resp.Body = &cappedBody{rc: resp.Body, left: c.max, limit: c.max}
	return resp, nil
}

// CloseIdleConnections closes the pool's idle connections
// (http.Client.CloseIdleConnections calls it).
func (c *capped) CloseIdleConnections() { c.rt.CloseIdleConnections() }

// cappedBody is a response body that fails, rather than ends, past its
// cap, as http.MaxBytesReader does for requests.
type cappedBody struct {
	rc    io.ReadCloser
	left  int64
	limit int64
	err   error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Why one byte more than left: to tell a body of exactly the cap,
	// which ends, from one that goes on.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) <= b.left {
		b.left -= int64(n)
		b.err = err
		return n, err
	}
	n, b.left = int(b.left), 0
	b.err = &TooLargeError{Limit: b.limit}
	return n, b.err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

var _ http.RoundTripper = (*capped)(nil)
