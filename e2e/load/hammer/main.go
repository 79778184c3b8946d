// Command hammer is the hostile client of e2e/load/hostile.sh: it keeps -c
// requests in flight against one filter for -d, each a signed GET of one of
// the uploaded images through the chain -query with a nonce of its own (so
// no two requests are coalesced or served from a cache), then waits up to
// -drain for the requests still running and prints what they all got. Each
// connection sends at most -n requests.
//
//	hammer -url http://127.0.0.1:PORT -priv SECRET -images thumb-1080p.paths \
//	    -name loop -query 't[]=loop:n=%d' -c 4 -d 18s
//
// prints one line:
//
//	loop: c=4, 36 requests, 504 x36, 0 cut; p50 2004 ms, p99 2011 ms, max 2011 ms
//
// A connection starts its next request when the previous one has answered,
// but not sooner than -gap after it started, so a server that answers at
// once (a 503) is asked at most c/gap times a second and the client's own
// CPU stays small beside the server's. "cut" counts the requests still
// running when the drain ran out (cancelled, not in the latencies).
//
// SIGUSR1 pauses it: no connection starts a request until SIGUSR2, and
// the requests under way run to their end (hostile.sh's paired segments).
// Pausing does not extend -d. SIGTERM ends -d at once: the requests under
// way get -drain, and the line is printed. -ready names a file created
// once these signals are handled (before, SIGUSR1 would end the process).
package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// hammer is one run: its flags and what its requests got.
type hammer struct {
	base, user, priv, images, name, query string
	ready                                 string
	c, perConn                            int
	d, drain, gap                         time.Duration

	client *http.Client
	paths  []string
	nonce  atomic.Int64
	paused atomic.Bool

	mu       sync.Mutex
	statuses map[string]int
	millis   []float64
	cut      int
}

func main() {
	h := &hammer{statuses: map[string]int{}}
	flag.StringVar(&h.base, "url", "", "base URL of the server")
	flag.StringVar(&h.user, "user", "load", "user the images belong to")
	flag.StringVar(&h.priv, "priv", "", "private key the access tokens are signed with")
	flag.StringVar(&h.images, "images", "", "a file of request targets (gen's .paths): the image paths are taken from it")
	flag.StringVar(&h.name, "name", "hammer", "label of the output line")
	flag.StringVar(&h.query, "query", "", "query string of each request, %d standing for the request's nonce")
	flag.IntVar(&h.c, "c", 4, "requests in flight")
	flag.DurationVar(&h.d, "d", 15*time.Second, "how long to start new requests")
	flag.DurationVar(&h.drain, "drain", 30*time.Second, "how long to wait after -d for the requests still running")
	flag.DurationVar(&h.gap, "gap", 100*time.Millisecond, "least time between the starts of two requests of one connection")
	flag.IntVar(&h.perConn, "n", 1000, "most requests of one connection")
	flag.StringVar(&h.ready, "ready", "", "a file created once SIGUSR1, SIGUSR2 and SIGTERM are handled")
	flag.Parse()
	if h.base == "" || h.priv == "" || h.images == "" || !strings.Contains(h.query, "%d") || h.c < 1 {
		flag.Usage()
		os.Exit(2)
	}
	h.base = strings.TrimSuffix(h.base, "/")
	var err error
	if h.paths, err = imagePaths(h.images, h.user); err != nil {
		fmt.Fprintln(os.Stderr, "hammer:", err)
		os.Exit(1)
	}
	h.run()
	fmt.Println(h.report())
}

// run keeps c connections busy until d has passed, then waits up to drain.
func (h *hammer) run() {
	stopStarting := time.Now().Add(h.d)
	ctx, cancel := context.WithDeadline(context.Background(), stopStarting.Add(h.drain))
	defer cancel()
	h.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: h.c, DisableCompression: true}}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM)
	if h.ready != "" {
		if err := os.WriteFile(h.ready, nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "hammer:", err)
			os.Exit(1)
		}
	}
	stopped := make(chan struct{})
	go func() {
		for s := range sig {
			if s == syscall.SIGTERM {
				close(stopped)
				time.AfterFunc(h.drain, cancel)
				return
			}
			h.paused.Store(s == syscall.SIGUSR1)
		}
	}()
	starting := func() bool {
		select {
		case <-stopped:
			return false
		default:
			return time.Now().Before(stopStarting)
		}
	}
	var wg sync.WaitGroup
	for range h.c {
		wg.Go(func() {
			for range h.perConn {
				for h.paused.Load() && starting() {
					time.Sleep(10 * time.Millisecond)
				}
				if !starting() {
					return
				}
				took := h.one(ctx)
				if ctx.Err() != nil {
					return
				}
				time.Sleep(h.gap - took)
			}
		})
	}
	wg.Wait()
}

// one sends one request, records what it got and returns how long it took.
func (h *hammer) one(ctx context.Context) time.Duration {
	n := h.nonce.Add(1)
	path := h.paths[int(n)%len(h.paths)] + "?" + fmt.Sprintf(h.query, n)
	target := h.base + path + "&accessToken=" + hmacHex(h.priv, h.base+path)
	start := time.Now()
	status, err := get(ctx, h.client, target)
	took := time.Since(start)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		h.cut++
	case err != nil:
		h.statuses["error"]++
	default:
		h.statuses[fmt.Sprint(status)]++
		h.millis = append(h.millis, float64(took.Microseconds())/1000)
	}
	return took
}

// report is the output line.
func (h *hammer) report() string {
	var b strings.Builder
	total := len(h.millis) + h.statuses["error"] + h.cut
	fmt.Fprintf(&b, "%s: c=%d, %d request%s", h.name, h.c, total, map[bool]string{true: "s"}[total != 1])
	for _, k := range slices.Sorted(maps.Keys(h.statuses)) {
		fmt.Fprintf(&b, ", %s x%d", k, h.statuses[k])
	}
	fmt.Fprintf(&b, ", %d cut", h.cut)
	switch len(h.millis) {
	case 0:
	case 1:
		fmt.Fprintf(&b, "; %.0f ms", h.millis[0])
	default:
		slices.Sort(h.millis)
		fmt.Fprintf(&b, "; p50 %.0f ms, p99 %.0f ms, max %.0f ms",
			percentile(h.millis, 50), percentile(h.millis, 99), h.millis[len(h.millis)-1])
	}
	return b.String()
}

// get fetches target and reads the body; the status is 0 with an error.
func get(ctx context.Context, client *http.Client, target string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return 0, err
	}
	return res.StatusCode, nil
}

// imagePaths reads the distinct image paths (before the query) of the
// request targets in file.
func imagePaths(file, user string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var paths []string
	seen := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		p, _, _ := strings.Cut(s.Text(), "?")
		if strings.HasPrefix(p, "/users/"+user+"/images/") && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no image paths of user %s", file, user)
	}
	return paths, nil
}

// percentile is the nearest-rank p-th percentile of sorted.
func percentile(sorted []float64, p float64) float64 {
	i := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func hmacHex(key, data string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(data))
	return hex.EncodeToString(m.Sum(nil))
}
