package outbound_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/api/outbound"
)

// newGuard builds a guard with allow and no way to reach the network:
// Check decides without connecting, and its tests never dial.
func newGuard(t *testing.T, allow ...string) *outbound.Guard {
	t.Helper()
	g, err := outbound.New(outbound.Config{Allow: allow, Resolver: fakeResolver{}, Dialer: &loopbackDialer{t: t}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestCheck decides on addresses alone. The public ones are never
// contacted: Check only compares.
func TestCheck(t *testing.T) {
	cases := []struct {
		addr  string
		allow []string
		want  string // a part of the reason; "" when allowed
	}{
		{"127.0.0.1", nil, "127.0.0.1 is a loopback address"},
		{"127.255.255.254", nil, "loopback"},
		{"::1", nil, "::1 is a loopback address"},
		{"169.254.169.254", nil, "169.254.169.254 is a link-local cloud metadata address"},
		{"169.254.1.1", nil, "169.254.1.1 is a link-local address"},
		{"fd00:ec2::254", nil, "fd00:ec2::254 is a cloud metadata address"},
		{"10.0.0.1", nil, "10.0.0.1 is a private address"},
		{"172.16.0.1", nil, "private"},
		{"172.31.255.255", nil, "private"},
		{"192.168.1.1", nil, "192.168.1.1 is a private address"},
		{"100.64.0.1", nil, "100.64.0.1 is a shared (carrier-grade NAT) address"},
		{"100.127.255.255", nil, "shared"},
		{"0.0.0.0", nil, "0.0.0.0 is the unspecified address"},
		{"0.1.2.3", nil, "this network"},
		{"::", nil, ":: is the unspecified address"},
		{"224.0.0.1", nil, "multicast"},
		{"239.255.255.250", nil, "multicast"},
		{"ff02::1", nil, "multicast"},
		{"255.255.255.255", nil, "the broadcast address"},
		{"240.0.0.1", nil, "reserved"},
		{"198.18.0.1", nil, "benchmarking"},
		{"192.0.0.8", nil, "IETF protocol assignment"},
		{"fd00::1", nil, "fd00::1 is a unique local address"},
		{"fc00::1", nil, "unique local"},
		{"fe80::1", nil, "link-local"},
		{"fe80::1%eth0", nil, "link-local"},
		{"fec0::1", nil, "site-local"},
		{"::ffff:127.0.0.1", nil, "::ffff:127.0.0.1 is a loopback address"},
		{"::ffff:169.254.169.254", nil, "metadata"},
		{"::ffff:10.0.0.1", nil, "private"},
		{"::127.0.0.1", nil, "IPv4-compatible"},
		{"64:ff9b::a00:1", nil, "the NAT64 form of 10.0.0.1, a private address"},
		{"64:ff9b::7f00:1", nil, "the NAT64 form of 127.0.0.1, a loopback address"},
		{"64:ff9b:1::1", nil, "local-use"},
		{"2001::1", nil, "Teredo"},
		{"2002:7f00:1::", nil, "6to4"},
		{"100::1", nil, "discard-only"},
		{"4000::1", nil, "outside IPv6's global unicast range"},
		// Documentation ranges are refused, unless the allowlist opens
		// them, as the client tests do to stand for public hosts.
		{"192.0.2.1", nil, "192.0.2.1 is a documentation address"},
		{"198.51.100.7", nil, "documentation"},
		{"203.0.113.9", nil, "documentation"},
		{"2001:db8::1", nil, "2001:db8::1 is a documentation address"},
		{"3fff::1", nil, "documentation"},
		{"192.0.2.1", []string{"192.0.2.0/24"}, ""},
		{"2001:db8::1", []string{"2001:db8::/32"}, ""},
		{"64:ff9b::c000:201", []string{"192.0.2.0/24"}, ""},
		// Public addresses pass.
		{"1.1.1.1", nil, ""},
		{"2606:4700:4700::1111", nil, ""},
		{"64:ff9b::101:101", nil, ""},
		{"::ffff:1.1.1.1", nil, ""},
		// The allowlist opens exactly what it names.
		{"127.0.0.1", []string{"127.0.0.1/32"}, ""},
		{"::ffff:127.0.0.1", []string{"127.0.0.1"}, ""},
		{"127.0.0.2", []string{"127.0.0.1/32"}, "127.0.0.2 is a loopback address"},
		{"::1", []string{"127.0.0.1/32"}, "::1 is a loopback address"},
		{"127.0.0.1", []string{"::1"}, "loopback"},
		{"::1", []string{"[::1]"}, ""},
		{"10.1.2.3", []string{"10.1.0.0/16"}, ""},
		{"10.2.0.1", []string{"10.1.0.0/16"}, "private"},
		{"169.254.169.254", []string{"10.0.0.0/8", "hooks.internal"}, "metadata"},
	}
	for _, c := range cases {
		t.Run(c.addr+"/"+strings.Join(c.allow, ","), func(t *testing.T) {
			t.Parallel()
			err := newGuard(t, c.allow...).Check(netip.MustParseAddr(c.addr))
			if c.want == "" {
				if err != nil {
					t.Errorf("Check(%s) = %v, want allowed", c.addr, err)
				}
				return
			}
			var refused *outbound.RefusedError
			if !errors.Is(err, outbound.ErrRefused) || !errors.As(err, &refused) {
				t.Fatalf("Check(%s) = %v, want a refusal", c.addr, err)
			}
			if !strings.Contains(err.Error(), c.want) || refused.Addr != netip.MustParseAddr(c.addr) {
				t.Errorf("Check(%s) = %q (address %s), want it to say %q", c.addr, err, refused.Addr, c.want)
			}
		})
	}
}

// TestCheckInvalid refuses the zero address.
func TestCheckInvalid(t *testing.T) {
	if err := newGuard(t).Check(netip.Addr{}); !errors.Is(err, outbound.ErrRefused) {
		t.Errorf("Check(zero) = %v, want a refusal", err)
	}
}

// TestConfigValidate reads the allowlist's forms and refuses what is none
// of them, naming the key.
func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  outbound.Config
		want string // "" when valid
	}{
		{"empty", outbound.Config{}, ""},
		{"forms", outbound.Config{Allow: []string{"10.0.0.0/8", "127.0.0.1", "::1", "[::1]", "fd12::/64", "hooks.internal", "Hooks.Example.COM.", " localhost "}}, ""},
		{"host bits", outbound.Config{Allow: []string{"10.0.0.1/8"}}, ""},
		{"url", outbound.Config{Allow: []string{"http://hooks.internal"}}, `outbound.allow: "http://hooks.internal" is neither`},
		{"port", outbound.Config{Allow: []string{"hooks.internal:80"}}, "neither"},
		{"wildcard", outbound.Config{Allow: []string{"*.example.com"}}, "neither"},
		{"star", outbound.Config{Allow: []string{"*"}}, "neither"},
		{"empty entry", outbound.Config{Allow: []string{""}}, "neither"},
		{"bad address", outbound.Config{Allow: []string{"10.0.0.300"}}, "neither"},
		{"bad prefix", outbound.Config{Allow: []string{"10.0.0.0/33"}}, "neither"},
		{"hyphen", outbound.Config{Allow: []string{"-a.example"}}, "neither"},
		{"mapped", outbound.Config{Allow: []string{"::ffff:10.0.0.0/104"}}, "IPv4 form"},
		{"zone", outbound.Config{Allow: []string{"fe80::1%eth0"}}, "zone"},
		{"timeout", outbound.Config{Timeout: -1}, "timeout"},
		{"maxBytes", outbound.Config{MaxBytes: -1}, "maxBytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("Validate() = %v, want %q", err, c.want)
			}
			if _, nerr := outbound.New(c.cfg); (nerr == nil) != (err == nil) {
				t.Errorf("New() = %v, Validate() = %v", nerr, err)
			}
		})
	}
}
