package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// receive serves webhook deliveries on every address of addrs until
// SIGTERM or SIGINT. Each delivery is answered 204 after delay (a slow
// receiver when it is long). The first delivery of each event (its
// webhook-id) on each address records its delivery lag: its arrival
// minus the CloudEvent's time, when its change was made. GET /stats on
// any address answers the statistics over all of them; on SIGTERM they
// are written to statsFile (when set). With a secret, each delivery's
// signature is verified, and one that fails is answered 401 and counted.
func receive(addrs []string, delay time.Duration, secret, statsFile string) {
	st := &deliveryStats{seen: map[string]bool{}, events: map[string]bool{}}
	var wh *standardwebhooks.Webhook
	if secret != "" {
		var err error
		wh, err = standardwebhooks.NewWebhook(secret)
		check(err)
	}
	for _, addr := range addrs {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintln(w, st)
		})
		mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
			arrival := time.Now()
			body, err := io.ReadAll(r.Body)
			var ev struct{ Time time.Time }
			if err == nil {
				err = json.Unmarshal(body, &ev)
			}
			if err == nil && wh != nil {
				err = wh.Verify(body, r.Header)
			}
			if err != nil || ev.Time.IsZero() {
				st.bad(arrival)
				http.Error(w, "bad delivery", http.StatusUnauthorized)
				return
			}
			st.add(addr+" "+r.Header.Get("webhook-id"), r.Header.Get("webhook-id"), ev.Time, arrival)
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusNoContent)
		})
		serve(addr, mux)
	}
	waitForStop()
	if statsFile != "" {
		check(os.WriteFile(statsFile, []byte(st.String()+"\n"), 0o644))
	}
}

// serve listens on addr and serves h there in the background; the
// process ends if either fails.
func serve(addr string, h http.Handler) {
	ln, err := net.Listen("tcp", addr)
	check(err)
	go func() { check(http.Serve(ln, h)) }()
}

// waitForStop returns once the process gets SIGTERM or SIGINT.
func waitForStop() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}

// deliveryStats counts the deliveries a receiver was sent.
type deliveryStats struct {
	mu     sync.Mutex
	seen   map[string]bool // address and webhook-id
	events map[string]bool // webhook-id
	lags   []float64       // ms, of each first delivery
	dups   int
	bads   int
	// first is the earliest change time delivered, last the latest arrival.
	first, last time.Time
}

// add records a delivery of event id, made at changed, that arrived at
// arrival; key is its address and id.
func (s *deliveryStats) add(key, id string, changed, arrival time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = arrival
	if s.seen[key] {
		s.dups++
		return
	}
	s.seen[key], s.events[id] = true, true
	s.lags = append(s.lags, float64(arrival.Sub(changed).Microseconds())/1000)
	if s.first.IsZero() || changed.Before(s.first) {
		s.first = changed
	}
}

func (s *deliveryStats) bad(arrival time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bads++
	s.last = arrival
}

// String is one line: deliveries (first per address and id), distinct
// events, duplicates, bad deliveries, the lag's median and 99th
// percentile, and the events delivered per second from the earliest
// change to the last arrival.
func (s *deliveryStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lags := append([]float64(nil), s.lags...)
	span := s.last.Sub(s.first).Seconds()
	rate := 0.0
	if span > 0 {
		rate = float64(len(s.events)) / span
	}
	return fmt.Sprintf("deliveries %d events %d duplicates %d bad %d lag p50 %.1f ms p99 %.1f ms span %.2f s events/s %.1f",
		len(lags), len(s.events), s.dups, s.bads, percentile(lags, 0.5), percentile(lags, 0.99), span, rate)
}
