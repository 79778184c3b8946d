package outbound

import "net/netip"

// special is a range no outbound connection may reach unless the
// allowlist opens it, and what its addresses are.
type special struct {
	prefix netip.Prefix
	what   string
}

func r(prefix, what string) special { return special{netip.MustParsePrefix(prefix), what} }

// specials are the refused ranges, the more specific first so that the
// refusal names the most telling one. Addresses are unmapped before they
// are looked up, so ::ffff:10.0.0.1 meets 10.0.0.0/8. Documentation and
// benchmarking ranges are refused too: nothing legitimate answers there,
// and some networks use them inside (fake-IP DNS proxies hand out
// 198.18.0.0/15); tests open them through the allowlist to stand for
// public hosts.
var specials = []special{
	r("169.254.169.254/32", "a link-local cloud metadata address"),
	r("0.0.0.0/32", "the unspecified address"),
	r("0.0.0.0/8", `a "this network" address (0.0.0.0/8)`),
	r("10.0.0.0/8", "a private address"),
	r("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
	r("127.0.0.0/8", "a loopback address"),
	r("169.254.0.0/16", "a link-local address"),
	r("172.16.0.0/12", "a private address"),
	r("192.0.0.0/24", "an IETF protocol assignment address"),
	r("192.0.2.0/24", "a documentation address"),
	r("192.88.99.0/24", "a 6to4 relay anycast address (deprecated)"),
	r("192.168.0.0/16", "a private address"),
	r("198.18.0.0/15", "a benchmarking address"),
	r("198.51.100.0/24", "a documentation address"),
	r("203.0.113.0/24", "a documentation address"),
	r("224.0.0.0/4", "a multicast address"),
	r("255.255.255.255/32", "the broadcast address"),
	r("240.0.0.0/4", "a reserved address (240.0.0.0/4)"),

	r("::/128", "the unspecified address"),
	r("::1/128", "a loopback address"),
	r("::/96", "an IPv4-compatible address (deprecated)"),
	r("64:ff9b:1::/48", "a local-use IPv4/IPv6 translation address"),
	r("100::/64", "a discard-only address"),
	r("2001:db8::/32", "a documentation address"),
	r("2001::/23", "an IETF protocol assignment address (Teredo, ORCHID, ...)"),
	r("2002::/16", "a 6to4 address (deprecated)"),
	r("3fff::/20", "a documentation address"),
	r("fd00:ec2::254/128", "a cloud metadata address (unique local)"),
	r("fc00::/7", "a unique local address"),
	r("fe80::/10", "a link-local address"),
	r("fec0::/10", "a site-local address (deprecated)"),
	r("ff00::/8", "a multicast address"),
}

var (
	// nat64 is the well-known NAT64 prefix: its addresses carry an IPv4
	// address in their last 32 bits, which is what they reach.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// globalUnicast6 is the only IPv6 space assigned for public hosts.
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
)

// Check decides on one address alone, as the guard does at connect time:
// nil when a connection to a may be made, a *RefusedError (matching
// ErrRefused) naming a and why otherwise. It never connects anywhere.
func (g *Guard) Check(a netip.Addr) error {
	if e := g.check(a); e != nil {
		return e
	}
	return nil
}

// check is Check with its concrete type, for DialContext to add the host.
func (g *Guard) check(a netip.Addr) *RefusedError {
	if !a.IsValid() {
		return &RefusedError{Addr: a, What: "not an IP address"}
	}
	if what := g.refusal(a.WithZone("").Unmap()); what != "" {
		return &RefusedError{Addr: a, What: what}
	}
	return nil
}

// refusal says what a (unmapped, without zone) is when the guard refuses
// it, "" when it may be reached.
func (g *Guard) refusal(a netip.Addr) string {
	if g.allow.contains(a) {
		return ""
	}
	if nat64.Contains(a) {
		b := a.As16()
		v4 := netip.AddrFrom4([4]byte(b[12:]))
		if what := g.refusal(v4); what != "" {
			return "the NAT64 form of " + v4.String() + ", " + what
		}
		return ""
	}
	for _, s := range specials {
		if s.prefix.Contains(a) {
			return s.what
		}
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return "an address outside IPv6's global unicast range 2000::/3"
	}
	return ""
}
