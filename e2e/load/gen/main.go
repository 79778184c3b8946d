// Command gen prepares the load test of e2e/load/run.sh: it generates
// distinct JPEG sources, uploads them to a running vitrine with signed
// requests and writes, per workload, a file of signed GET request targets
// (path and query with accessToken), one per line, for wrk to cycle through.
//
//	gen -url http://127.0.0.1:PORT -user load -pub load -priv SECRET -n 32 -out DIR
//	gen -url ... -priv SECRET -n 16 -upload-latency
//	                   uploads n sources per size one after another and prints
//	                   the uploads' latency percentiles (e2e/load/upload.sh)
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
	flag.Parse()

	switch {
	case *freePort:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		check(err)
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
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
		uploadLatency(strings.TrimSuffix(*base, "/"), *user, *pub, *priv, *n)
		return
	}
	if *base == "" || *priv == "" || *out == "" || *n < 1 {
		flag.Usage()
		os.Exit(2)
	}
	check(os.MkdirAll(*out, 0o755))
	*base = strings.TrimSuffix(*base, "/")

	sizes := []struct {
		name string
		w, h int
	}{{"1080p", 1920, 1080}, {"12mp", 4000, 3000}}
	workloads := []struct {
		name, spec string
	}{{"thumb", "thumbnail:width=200,height=200"}, {"w800", "resize:width=800"},
		// For e2e/load/guest.sh: the thumb chain plus one WebAssembly step
		// (wasm-sdk/examples/duotone); it needs a server with that filter.
		{"thumbduo", "thumbnail:width=200,height=200&t[]=duotone:dark=202020,light=f0f0f0"}}

	for si, size := range sizes {
		start := time.Now()
		srcs := generate(size.w, size.h, *n, uint32(si**n))
		var total int
		ids := make([]string, len(srcs))
		for i, src := range srcs {
			total += len(src)
			ids[i] = upload(*base, *user, *pub, *priv, src)
		}
		fmt.Fprintf(os.Stderr, "gen: %d distinct %dx%d JPEGs, %d KB on average, generated and uploaded in %s\n",
			len(srcs), size.w, size.h, total/len(srcs)/1024, time.Since(start).Round(time.Millisecond))
		for _, wl := range workloads {
			var b strings.Builder
			for _, id := range ids {
				b.WriteString(signedPath(*base, *user, *priv, id, wl.spec))
				b.WriteByte('\n')
			}
			check(os.WriteFile(filepath.Join(*out, wl.name+"-"+size.name+".paths"), []byte(b.String()), 0o644))
		}
	}
}

// uploadLatency uploads n distinct 1920x1080 and n 4000x3000 JPEGs,
// alternating, each as soon as the one before is answered, and prints the
// median, 90th and 99th percentile of their latency per size.
func uploadLatency(base, user, pub, priv string, n int) {
	seed := uint32(time.Now().UnixNano())
	small, large := generate(1920, 1080, n, seed), generate(4000, 3000, n, seed+uint32(n))
	var ms [2][]float64
	for i := range n {
		for k, src := range [][]byte{small[i], large[i]} {
			start := time.Now()
			upload(base, user, pub, priv, src)
			ms[k] = append(ms[k], float64(time.Since(start).Microseconds())/1000)
		}
	}
	for k, name := range []string{"1920x1080", "4000x3000"} {
		slices.Sort(ms[k])
		pct := func(p float64) float64 { return ms[k][min(len(ms[k])-1, int(p*float64(len(ms[k]))))] }
		fmt.Printf("%s uploads %d p50 %.1f ms p90 %.1f ms p99 %.1f ms\n", name, n, pct(0.5), pct(0.9), pct(0.99))
	}
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
