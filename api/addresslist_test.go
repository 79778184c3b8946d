package api

import (
	"net/http/httptest"
	"testing"
)

// TestClientIP checks the X-Forwarded-For walk the API and the admin UI
// share.
func TestClientIP(t *testing.T) {
	proxies, err := ParseAddressList([]string{"10.0.0.0/8", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, peer, xff, want string
	}{
		{"direct", "192.0.2.1:5000", "", "192.0.2.1"},
		{"untrusted peer's header ignored", "192.0.2.1:5000", "198.51.100.7", "192.0.2.1"},
		{"one trusted proxy", "10.0.0.1:5000", "198.51.100.7", "198.51.100.7"},
		{"chain of proxies", "10.0.0.1:5000", "198.51.100.7, 203.0.113.9, 10.1.1.1", "203.0.113.9"},
		{"garbage ends the walk", "10.0.0.1:5000", "198.51.100.7, junk, 10.1.1.1", "10.1.1.1"},
		{"only proxies", "10.0.0.1:5000", "10.2.2.2", "10.2.2.2"},
		{"mapped IPv4 peer", "[::ffff:192.0.2.1]:5000", "198.51.100.7", "192.0.2.1"},
		{"IPv6 proxy", "[::1]:5000", "2001:db8::1", "2001:db8::1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			if tt.xff != "" {
				r.Header.Set("X-Forwarded-For", tt.xff)
			}
			if got := ClientIP(r, proxies).String(); got != tt.want {
				t.Errorf("ClientIP = %s, want %s", got, tt.want)
			}
		})
	}
}
