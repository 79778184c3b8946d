// Package faultproxy is the TCP proxy the fault tests put between vitrine
// and a dependency (a blob store, a message broker, a purger, a webhook
// receiver): it forwards, stalls (accepts and never answers, as a frozen
// process does) or refuses, and cuts every connection when its mode
// changes. It listens on loopback only.
package faultproxy

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
)

// Mode is what the proxy does with connections.
type Mode int

const (
	// Pass forwards to the target.
	Pass Mode = iota
	// Stall accepts and never answers.
	Stall
	// Refuse closes the listener: connections are refused.
	Refuse
)

// Proxy forwards TCP connections to a target, or stalls or refuses them.
type Proxy struct {
	// Addr is where it listens (127.0.0.1:port), the same in every mode.
	Addr   string
	target string

	mu    sync.Mutex
	mode  Mode
	ln    net.Listener
	conns map[net.Conn]bool
}

// Start listens on a free loopback port and forwards to target until the
// test ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr, p.ln = ln.Addr().String(), ln
	go p.serve(ln)
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.ln != nil {
			p.ln.Close()
		}
		p.closeConns()
	})
	return p
}

func (p *Proxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = true
		mode := p.mode
		p.mu.Unlock()
		if mode == Stall {
			continue // held open, never answered, closed when the mode changes
		}
		go p.forward(c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[u] = true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(u, c); u.Close() }()
	_, _ = io.Copy(c, u)
	c.Close()
}

// closeConns cuts every connection; p.mu is held.
func (p *Proxy) closeConns() {
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// Set switches the mode; connections made under the old mode are cut.
func (p *Proxy) Set(mode Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeConns()
	switch {
	case mode == Refuse && p.ln != nil:
		p.ln.Close()
		p.ln = nil
	case mode != Refuse && p.ln == nil:
		ln, err := net.Listen("tcp", p.Addr)
		if err != nil {
			panic(fmt.Sprintf("faultproxy: listen again on %s: %v", p.Addr, err))
		}
		p.ln = ln
		go p.serve(ln)
	}
	p.mode = mode
}
