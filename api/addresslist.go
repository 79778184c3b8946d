package api

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// AddressList is a list of client addresses and CIDR ranges, or `*` for
// every address, written as statsAllow and trustedProxies are. The admin UI
// uses it to read trustedProxies exactly as the API does.
type AddressList struct{ p prefixList }

// ParseAddressList reads addresses, CIDR ranges and `*`.
func ParseAddressList(list []string) (AddressList, error) {
	p, err := newPrefixList(list)
	return AddressList{p}, err
}

// Contains reports whether the list holds a.
func (l AddressList) Contains(a netip.Addr) bool { return l.p.contains(a) }

// Peer returns the address of r's TCP peer; the zero Addr when RemoteAddr
// holds none.
func Peer(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

// FromTrustedProxy reports whether r came through a proxy in proxies, whose
// X-Forwarded-* headers may then be believed.
func FromTrustedProxy(r *http.Request, proxies AddressList) bool {
	a := Peer(r)
	return a.IsValid() && proxies.Contains(a)
}

// ClientIP returns the address r came from: the TCP peer, or, when the
// peer is a trusted proxy, the nearest X-Forwarded-For hop (walking right
// to left) that is not itself a trusted proxy. A hop that is not an
// address ends the walk: what lies left of it cannot be believed.
func ClientIP(r *http.Request, proxies AddressList) netip.Addr {
	ip := Peer(r)
	if !FromTrustedProxy(r, proxies) {
		return ip
	}
	hops := strings.Split(r.Header.Get("X-Forwarded-For"), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		ip = a.Unmap()
		if !proxies.Contains(ip) {
			break
		}
	}
	return ip
}
