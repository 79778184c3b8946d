package outbound_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api/outbound"
)

// fakeResolver answers from its map and never asks real DNS.
type fakeResolver map[string][]string

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	answer, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host (fake resolver)", Name: host, IsNotFound: true}
	}
	var addrs []netip.Addr
	for _, a := range answer {
		addrs = append(addrs, netip.MustParseAddr(a))
	}
	return addrs, nil
}

// loopbackDialer connects only to 127.0.0.0/8 and ::1 and fails the test
// for anything else, a name included: the guard must dial the addresses
// it checked. It records what it was asked to dial.
type loopbackDialer struct {
	t      *testing.T
	mu     sync.Mutex
	dialed []string
}

var loopback4 = netip.MustParsePrefix("127.0.0.0/8")

func (d *loopbackDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, address)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !loopback4.Contains(ap.Addr()) && ap.Addr() != netip.IPv6Loopback() {
		d.t.Errorf("the guard dialed %s: only checked loopback addresses may be dialed", address)
		return nil, errors.New("test dialer: not a loopback address")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, address)
}

func (d *loopbackDialer) calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialed...)
}

// guarded builds a guard on the test's resolver and dialer.
func guarded(t *testing.T, c outbound.Config) (*http.Client, *loopbackDialer) {
	t.Helper()
	d := &loopbackDialer{t: t}
	c.Dialer = d
	if c.Resolver == nil {
		c.Resolver = fakeResolver{}
	}
	g, err := outbound.New(c)
	if err != nil {
		t.Fatal(err)
	}
	client := g.Client()
	t.Cleanup(client.CloseIdleConnections)
	return client, d
}

// receiver is a local HTTP server on 127.0.0.1 and its port.
func receiver(t *testing.T, h http.Handler) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL[strings.LastIndexByte(s.URL, ':')+1:]
}

// TestClientDestinations requests destinations through the guard's
// client: refused ones never reach the dialer; allowed ones reach the
// loopback receiver through the address that was checked.
func TestClientDestinations(t *testing.T) {
	port := receiver(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	names := fakeResolver{
		"receiver.test":       {"127.0.0.1"},
		"hooks.test":          {"127.0.0.1"},
		"mixed.test":          {"192.0.2.10", "10.0.0.1"},
		"mixed-loopback.test": {"127.0.0.1", "127.0.0.2"},
		"v6.test":             {"::1"},
	}
	only := []string{"127.0.0.1/32"}
	cases := []struct {
		host  string
		allow []string
		want  string // a part of the refusal; "" when the receiver answers
	}{
		{"127.0.0.1", nil, "refused connection to 127.0.0.1: 127.0.0.1 is a loopback address"},
		{"[::1]", nil, "::1 is a loopback address"},
		{"169.254.169.254", nil, "169.254.169.254 is a link-local cloud metadata address"},
		{"10.0.0.1", nil, "10.0.0.1 is a private address"},
		{"192.168.1.1", nil, "192.168.1.1 is a private address"},
		{"100.64.0.1", nil, "100.64.0.1 is a shared (carrier-grade NAT) address"},
		{"[fd00::1]", nil, "fd00::1 is a unique local address"},
		{"[::ffff:127.0.0.1]", nil, "::ffff:127.0.0.1 is a loopback address"},
		{"receiver.test", nil, "refused connection to receiver.test: 127.0.0.1 is a loopback address"},
		{"mixed.test", []string{"192.0.2.0/24"}, "refused connection to mixed.test: 10.0.0.1 is a private address"},
		{"mixed-loopback.test", only, "127.0.0.2 is a loopback address"},
		{"127.0.0.2", only, "127.0.0.2 is a loopback address"},
		{"[::1]", only, "::1 is a loopback address"},
		{"v6.test", only, "::1 is a loopback address"},
		{"hooks.test", []string{"hooks.example"}, "loopback"},
		{"127.0.0.1", only, ""},
		{"[::ffff:127.0.0.1]", only, ""},
		{"receiver.test", only, ""},
		{"hooks.test", []string{"hooks.test"}, ""},
	}
	for _, c := range cases {
		t.Run(c.host+"/"+strings.Join(c.allow, ","), func(t *testing.T) {
			t.Parallel()
			client, d := guarded(t, outbound.Config{Allow: c.allow, Resolver: names})
			resp, err := client.Get("http://" + c.host + ":" + port + "/")
			if c.want != "" {
				var refused *outbound.RefusedError
				if !errors.Is(err, outbound.ErrRefused) || !errors.As(err, &refused) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("GET %s: %v, want a refusal saying %q", c.host, err, c.want)
				}
				if dialed := d.calls(); len(dialed) != 0 {
					t.Errorf("GET %s dialed %v before refusing", c.host, dialed)
				}
				return
			}
			if err != nil {
				t.Fatalf("GET %s: %v", c.host, err)
			}
			defer resp.Body.Close()
			if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "hello" {
				t.Errorf("GET %s read %q, %v", c.host, b, err)
			}
			if dialed := d.calls(); len(dialed) != 1 || dialed[0] != "127.0.0.1:"+port {
				t.Errorf("GET %s dialed %v, want 127.0.0.1:%s", c.host, dialed, port)
			}
		})
	}
}

// rebinding answers with each of its answers in turn, as a name an
// attacker rebinds between lookups does.
type rebinding struct {
	mu      sync.Mutex
	answers []string
}

func (r *rebinding) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.answers[0]
	if len(r.answers) > 1 {
		r.answers = r.answers[1:]
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// TestClientRebinding: every new connection is checked against the
// lookup it dials, so a name that turns to the metadata address is
// refused and the address never dialed.
func TestClientRebinding(t *testing.T) {
	port := receiver(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	client, d := guarded(t, outbound.Config{
		Allow:    []string{"127.0.0.1/32"},
		Resolver: &rebinding{answers: []string{"127.0.0.1", "169.254.169.254"}},
	})
	u := "http://rebind.test:" + port + "/"
	for i, want := range []string{"", "169.254.169.254 is a link-local cloud metadata address"} {
		client.CloseIdleConnections() // a new connection, so a new lookup
		resp, err := client.Get(u)
		if want == "" && err != nil || want != "" && (!errors.Is(err, outbound.ErrRefused) || !strings.Contains(err.Error(), want)) {
			t.Fatalf("request %d: %v, want %q", i, err, want)
		}
		if err == nil {
			resp.Body.Close()
		}
	}
	if dialed := d.calls(); len(dialed) != 1 || dialed[0] != "127.0.0.1:"+port {
		t.Errorf("dialed %v, want 127.0.0.1:%s once", dialed, port)
	}
}

// TestClientRedirects: a 3xx comes back as it is, its target not
// requested, even when the guard would allow it.
func TestClientRedirects(t *testing.T) {
	var mu sync.Mutex
	hits := 0
	targetPort := receiver(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
	}))
	port := receiver(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	for _, to := range []string{
		"http://127.0.0.1:" + targetPort + "/secret",
		"http://127.0.0.2:" + targetPort + "/secret",
		"http://[::1]:" + targetPort + "/secret",
		"http://169.254.169.254/latest/meta-data/",
	} {
		t.Run(to, func(t *testing.T) {
			client, d := guarded(t, outbound.Config{Allow: []string{"127.0.0.1/32"}})
			resp, err := client.Get("http://127.0.0.1:" + port + "/?to=" + url.QueryEscape(to))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != to {
				t.Errorf("got %d to %q, want the 302 to %s as it is", resp.StatusCode, resp.Header.Get("Location"), to)
			}
			if dialed := d.calls(); len(dialed) != 1 || dialed[0] != "127.0.0.1:"+port {
				t.Errorf("dialed %v, want only the receiver", dialed)
			}
		})
	}
	if hits != 0 {
		t.Errorf("the redirect target was requested %d times", hits)
	}
}

// TestClientMaxBytes: a body over the cap is an error, whether its
// Content-Length announces it or it is streamed; a body of exactly the
// cap reads whole.
func TestClientMaxBytes(t *testing.T) {
	const max = 1000
	port := receiver(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		if r.URL.Query().Has("stream") {
			io.WriteString(w, "x")
			w.(http.Flusher).Flush() // no Content-Length from here on
			n--
		} else {
			w.Header().Set("Content-Length", fmt.Sprint(n))
		}
		io.WriteString(w, strings.Repeat("x", n))
	}))
	cases := []struct {
		query     string
		wantGet   bool // the request itself fails
		wantRead  bool // reading the body fails
		wantBytes int
	}{
		{"n=1000", false, false, max},
		{"n=1001", true, false, 0},
		{"n=1000&stream", false, false, max},
		{"n=1001&stream", false, true, max},
		{"n=100000&stream", false, true, max},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			t.Parallel()
			client, _ := guarded(t, outbound.Config{Allow: []string{"127.0.0.1"}, MaxBytes: max})
			resp, err := client.Get("http://127.0.0.1:" + port + "/?" + c.query)
			if c.wantGet {
				var tooLarge *outbound.TooLargeError
				if !errors.Is(err, outbound.ErrTooLarge) || !errors.As(err, &tooLarge) || tooLarge.Limit != max {
					t.Errorf("GET: %v, want ErrTooLarge", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if c.wantRead != errors.Is(err, outbound.ErrTooLarge) || len(b) != c.wantBytes {
				t.Errorf("read %d bytes, %v; want %d bytes and ErrTooLarge %v", len(b), err, c.wantBytes, c.wantRead)
			}
		})
	}
}

// TestClientTimeout: a receiver that never answers ends in a timeout
// error, not a wait.
func TestClientTimeout(t *testing.T) {
	release := make(chan struct{})
	port := receiver(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release) }) // before the receiver closes
	client, _ := guarded(t, outbound.Config{Allow: []string{"127.0.0.1"}, Timeout: 50 * time.Millisecond})
	_, err := client.Get("http://127.0.0.1:" + port + "/")
	var uerr *url.Error
	if !errors.As(err, &uerr) || !uerr.Timeout() {
		t.Errorf("GET: %v, want a timeout", err)
	}
}

// TestRefusedMessages: the log's message names the host, the address and
// why; the public one leaves out what a name resolved to.
func TestRefusedMessages(t *testing.T) {
	cases := []struct {
		err         outbound.RefusedError
		log, public string
	}{
		{
			outbound.RefusedError{Host: "hooks.example", Addr: netip.MustParseAddr("10.0.0.1"), What: "a private address"},
			"outbound: refused connection to hooks.example: 10.0.0.1 is a private address",
			"Refused outbound connection: hooks.example resolves to a private address",
		},
		{
			outbound.RefusedError{Host: "169.254.169.254", Addr: netip.MustParseAddr("169.254.169.254"), What: "a link-local cloud metadata address"},
			"outbound: refused connection to 169.254.169.254: 169.254.169.254 is a link-local cloud metadata address",
			"Refused outbound connection: 169.254.169.254 is a link-local cloud metadata address",
		},
		{
			// Check sees only the address (a webhook URL's literal): it is
			// named, never a blank host.
			outbound.RefusedError{Addr: netip.MustParseAddr("10.1.2.3"), What: "a private address"},
			"outbound: refused: 10.1.2.3 is a private address",
			"Refused outbound connection: 10.1.2.3 is a private address",
		},
	}
	for _, c := range cases {
		t.Run(c.err.Host, func(t *testing.T) {
			if c.err.Error() != c.log || c.err.PublicMessage() != c.public || c.err.HTTPStatus() != http.StatusBadRequest {
				t.Errorf("got %q, %q, %d", c.err.Error(), c.err.PublicMessage(), c.err.HTTPStatus())
			}
		})
	}
}
