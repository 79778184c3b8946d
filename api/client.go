package api

import (
	"net"
	"net/netip"
	"strings"
)

// prefixList is a set of addresses and CIDR ranges; all matches everything.
type prefixList struct {
	all      bool
	prefixes []netip.Prefix
}

func newPrefixList(list []string) (prefixList, error) {
	var p prefixList
	for _, s := range list {
		if s == "*" {
			p.all = true
			continue
		}
		pf, err := parsePrefix(s)
		if err != nil {
			return p, err
		}
		p.prefixes = append(p.prefixes, pf)
	}
	return p, nil
}

func (p prefixList) contains(a netip.Addr) bool {
	if p.all {
		return true
	}
	a = a.Unmap()
	for _, pf := range p.prefixes {
		if pf.Contains(a) {
			return true
		}
	}
	return false
}

// fromTrustedProxy reports whether forwarding headers may be believed.
func (c *call) fromTrustedProxy() bool {
	return FromTrustedProxy(c.r, AddressList{c.s.trustedProxies})
}

// clientIP is the address the request came from (ClientIP).
func (c *call) clientIP() netip.Addr {
	return ClientIP(c.r, AddressList{c.s.trustedProxies})
}

// bases are the `scheme://host` prefixes a client may have signed, per
// authentication.protocol and trusted X-Forwarded-* headers.
func (s *Server) bases(c *call) []string {
	scheme, host := "http", c.r.Host
	if c.r.TLS != nil {
		scheme = "https"
	}
	if c.fromTrustedProxy() {
		if p := c.r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
			scheme = p
		}
		if h := c.r.Header.Get("X-Forwarded-Host"); h != "" {
			host = strings.TrimSpace(strings.Split(h, ",")[0])
		}
		if port := c.r.Header.Get("X-Forwarded-Port"); port != "" {
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !(scheme == "http" && port == "80") && !(scheme == "https" && port == "443") {
				host = net.JoinHostPort(host, port)
			}
		}
	}
	switch s.cfg.Authentication.Protocol {
	case "http", "https":
		scheme = s.cfg.Authentication.Protocol
	case "both":
		return []string{"http://" + host, "https://" + host}
	}
	return []string{scheme + "://" + host}
}
