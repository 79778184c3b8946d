package api

import "net/netip"

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
