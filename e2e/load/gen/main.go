// Command gen prepares the load test of e2e/load/run.sh: it generates
// distinct JPEG sources, uploads them to a running vitrine with signed
// requests and writes, per workload, a file of signed GET request targets
// (path and query with accessToken), one per line, for wrk to cycle through.
//
//	gen -url http://127.0.0.1:PORT -user load -pub load -priv SECRET -n 32 -out DIR
//	gen -url ... -priv SECRET -n 16 -upload-latency [-sizes 1080p,12mp]
//	                   uploads n sources per size one after another and prints
//	                   the uploads' latency percentiles (e2e/load/upload.sh,
//	                   e2e/load/events.sh)
//	gen -receiver 127.0.0.1:P1,127.0.0.1:P2 [-delay 30s] [-secret whsec_...] [-stats FILE]
//	                   answers webhook deliveries (receiver.go) and records
//	                   their delivery lag (e2e/load/events.sh)
//	gen -otlp 127.0.0.1:P
//	                   answers OTLP/HTTP trace exports and counts their spans
//	                   (otlp.go; e2e/load/tracing.sh)
//	gen -free-port     prints a free TCP port on 127.0.0.1
//	gen -wait URL      waits up to 30 s for URL to answer 200
//
// Sources are smooth gradients with slight noise, q90, about 390 KB at
// 1920x1080 and 2.2 MB at 4000x3000, each seeded differently so that every
// file is distinct (no request coalescing or cache can serve one from
// another).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"image/jpeg"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vitrine/vitrine/e2e/load/loadkit"
)

func main() {
	base := flag.String("url", "", "base URL of the server, e.g. http://127.0.0.1:8080")
	user := flag.String("user", "load", "user the images are stored for")
	pub := flag.String("pub", "load", "public key (read-write on user)")
	priv := flag.String("priv", "", "private key")
	n := flag.Int("n", 32, "distinct sources per size")
	out := flag.String("out", "", "directory for the <workload>.paths files")
	freePort := flag.Bool("free-port", false, "print a free TCP port on 127.0.0.1 and exit")
	wait := flag.String("wait", "", "wait until this URL answers 200, then exit")
	latency := flag.Bool("upload-latency", false, "upload n sources per size one by one and print latency percentiles")
	sizeNames := flag.String("sizes", "1080p,12mp", "-upload-latency: the source sizes, of 1080p (1920x1080) and 12mp (4000x3000)")
	receiver := flag.String("receiver", "", "serve webhook deliveries on these comma-separated addresses until SIGTERM")
	delay := flag.Duration("delay", 0, "-receiver: wait this long before answering each delivery")
	secret := flag.String("secret", "", "-receiver: verify each delivery's signature with this whsec_ secret")
	stats := flag.String("stats", "", "-receiver: write the delivery statistics to this file on SIGTERM")
	otlp := flag.String("otlp", "", "serve OTLP/HTTP trace exports on this address until SIGTERM, counting spans (GET /stats)")
	flag.Parse()

	switch {
	case *freePort:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		check(err)
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		return
	case *receiver != "":
		receive(strings.Split(*receiver, ","), *delay, *secret, *stats)
		return
	case *otlp != "":
		receiveOTLP(*otlp)
		return
	case *wait != "":
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if res, err := http.Get(*wait); err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		fmt.Fprintln(os.Stderr, "gen: server did not come up:", *wait)
		os.Exit(1)
	}
	if *latency && *base != "" && *priv != "" && *n > 0 {
		var sizes []size
		for _, name := range strings.Split(*sizeNames, ",") {
			i := slices.IndexFunc(sourceSizes, func(s size) bool { return s.name == name })
			if i < 0 {
				check(fmt.Errorf("unknown size %q (1080p, 12mp)", name))
			}
			sizes = append(sizes, sourceSizes[i])
		}
		uploadLatency(strings.TrimSuffix(*base, "/"), *user, *pub, *priv, *n, sizes)
		return
	}
	if *base == "" || *priv == "" || *out == "" || *n < 1 {
		flag.Usage()
		os.Exit(2)
	}
	check(os.MkdirAll(*out, 0o755))
	*base = strings.TrimSuffix(*base, "/")

	workloads := []struct {
		name, spec string
	}{{"thumb", "thumbnail:width=200,height=200"}, {"w800", "resize:width=800"},
		// For e2e/load/guest.sh: the thumb chain plus one WebAssembly step
		// (wasm-sdk/examples/duotone); it needs a server with that filter.
		{"thumbduo", "thumbnail:width=200,height=200&t[]=duotone:dark=202020,light=f0f0f0"}}

	for si, sz := range sourceSizes {
		start := time.Now()
		srcs := generate(sz.w, sz.h, *n, uint32(si**n))
		var total int
		ids := make([]string, len(srcs))
		for i, src := range srcs {
			total += len(src)
			ids[i] = upload(*base, *user, *pub, *priv, src)
		}
		fmt.Fprintf(os.Stderr, "gen: %d distinct %dx%d JPEGs, %d KB on average, generated and uploaded in %s\n",
			len(srcs), sz.w, sz.h, total/len(srcs)/1024, time.Since(start).Round(time.Millisecond))
		for _, wl := range workloads {
			var b strings.Builder
			for _, id := range ids {
				b.WriteString(signedPath(*base, *user, *priv, id, wl.spec))
				b.WriteByte('\n')
			}
			check(os.WriteFile(filepath.Join(*out, wl.name+"-"+sz.name+".paths"), []byte(b.String()), 0o644))
		}
	}
}

// size is a size of the generated sources.
type size struct {
	name string
	w, h int
}

var sourceSizes = []size{{"1080p", 1920, 1080}, {"12mp", 4000, 3000}}

// uploadLatency uploads n distinct JPEGs of each size, alternating sizes,
// each as soon as the one before is answered, and prints the median, 90th
// and 99th percentile of their latency per size.
func uploadLatency(base, user, pub, priv string, n int, sizes []size) {
	seed := uint32(time.Now().UnixNano())
	srcs := make([][][]byte, len(sizes))
	for k, s := range sizes {
		srcs[k] = generate(s.w, s.h, n, seed+uint32(k*n))
	}
	ms := make([][]float64, len(sizes))
	for i := range n {
		for k := range sizes {
			start := time.Now()
			upload(base, user, pub, priv, srcs[k][i])
			ms[k] = append(ms[k], float64(time.Since(start).Microseconds())/1000)
		}
	}
	for k, s := range sizes {
		fmt.Printf("%dx%d uploads %d p50 %.1f ms p90 %.1f ms p99 %.1f ms\n", s.w, s.h, n,
			percentile(ms[k], 0.5), percentile(ms[k], 0.9), percentile(ms[k], 0.99))
	}
}

// percentile is the p-th quantile of v (nearest rank, v sorted in place).
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[min(len(v)-1, int(p*float64(len(v))))]
}

// signedPath is the request target of a JPEG GET of id through spec, with an
// access token over the full URL.
func signedPath(base, user, priv, id, spec string) string {
	path := "/users/" + user + "/images/" + id + ".jpg?t[]=" + spec
	return path + "&accessToken=" + loadkit.HMACHex(priv, base+path)
}

// upload POSTs data with a signature and returns the image identifier;
// it exits on a failure.
func upload(base, user, pub, priv string, data []byte) string {
	id, err := loadkit.Upload(base, user, pub, priv, data)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen: upload:", err)
		os.Exit(1)
	}
	return id
}

// generate makes n distinct JPEGs of w x h in parallel.
func generate(w, h, n int, seed0 uint32) [][]byte {
	out := make([][]byte, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.NumCPU())
	for i := range out {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = noisyJPEG(w, h, seed0+uint32(i)+1)
		})
	}
	wg.Wait()
	return out
}

// noisyJPEG is loadkit.Photo as a q90 JPEG.
func noisyJPEG(w, h int, seed uint32) []byte {
	var buf bytes.Buffer
	check(jpeg.Encode(&buf, loadkit.Photo(w, h, seed), &jpeg.Options{Quality: 90}))
	return buf.Bytes()
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
