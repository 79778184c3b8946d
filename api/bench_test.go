package api_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// These benchmarks put a number on two claims of e2e/README.md's Performance section:
//
//   - the HTTP path is within 15% of the same libvips work in-process
//     (BenchmarkHTTPvsProcess: "inprocess" and "http" run the same chain on
//     the same bytes with the same parallelism; "http" also reports
//     http/inprocess, the ratio of the two ns/op, and inprocess-ns/op;
//     "http-2xinflight" keeps twice as many requests in flight, which
//     separates per-request latency outside the engine from CPU overhead);
//   - a transformed-variant cache hit is at least 10x faster than a miss
//     (BenchmarkVariantCache: "hit" reports miss/hit).
//
// Both sides run under b.RunParallel: GOMAXPROCS workers, two on the 2-core
// machines e2e/README.md's figures were measured on. Every worker cycles through
// benchDistinct different sources, so no two requests in flight share a URL
// (a server that coalesced identical requests would otherwise look faster
// than it is). The HTTP server runs with cacheVariants off, so every request
// renders. Run with:
//
//	go test ./api -run '^$' -bench . -benchtime 3s
//
// ops/s = 1e9 / ns/op. Nothing here asserts a time.

// benchDistinct is the number of distinct sources uploaded per size.
const benchDistinct = 8

var benchSizes = []struct {
	name string
	w, h int
}{{"1920x1080", 1920, 1080}, {"4000x3000", 4000, 3000}}

var benchWorkloads = []struct {
	name string
	spec string
}{
	{"thumbnail200", "thumbnail:width=200,height=200"},
	{"width800", "resize:width=800"},
}

// benchSources caches the generated JPEGs: "WxH" -> [][]byte.
var benchSources sync.Map

// benchJPEGs returns benchDistinct q90 JPEGs of w x h: a smooth gradient
// with slight noise (a few hundred KB at 1080p, like a photograph), each
// seeded differently so that every source has distinct bytes.
func benchJPEGs(b *testing.B, w, h int) [][]byte {
	b.Helper()
	key := fmt.Sprintf("%dx%d", w, h)
	if v, ok := benchSources.Load(key); ok {
		return v.([][]byte)
	}
	out := make([][]byte, benchDistinct)
	var wg sync.WaitGroup
	errs := make([]error, benchDistinct)
	for i := range out {
		wg.Go(func() { out[i], errs[i] = noisyJPEG(w, h, uint32(i)+1) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	benchSources.Store(key, out)
	return out
}

func noisyJPEG(w, h int, seed uint32) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	s := seed * 2654435761
	shift := int(seed * 37 % 64)
	for y := 0; y < h; y++ {
		row := img.Pix[y*img.Stride:]
		for x := 0; x < w; x++ {
			s = s*1664525 + 1013904223
			n := int(s>>28) - 8
			p := row[4*x:]
			p[0] = clamp8(x*255/w + n + shift - 32)
			p[1] = clamp8(y*255/h + n)
			p[2] = clamp8((x+y)*127/(w+h) + 64 - n)
			p[3] = 255
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func clamp8(v int) uint8 { return uint8(min(max(v, 0), 255)) }

// benchServer is a running service for benchmarks.
type benchServer struct {
	url    string
	db     *storage.DB
	blobs  *storage.Blobs
	engine *engine.Engine
	client *http.Client
}

func newBenchServer(b *testing.B, cacheVariants bool, opts ...func(*api.Deps)) *benchServer {
	b.Helper()
	return newBenchServerWith(b, func(cfg *api.Config) { cfg.CacheVariants = &cacheVariants }, opts...)
}

// newBenchServerWith is newBenchServer with the test configuration as edit
// leaves it.
func newBenchServerWith(b *testing.B, edit func(*api.Config), opts ...func(*api.Deps)) *benchServer {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	db, err := storage.Open(ctx, "sqlite://"+filepath.Join(dir, "vitrine.db"), storage.Options{Secret: []byte("bench-secret")})
	if err != nil {
		b.Fatal(err)
	}
	blobs, err := storage.OpenBlobs(ctx, "file://"+filepath.Join(dir, "images"))
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := testConfig()
	edit(&cfg)
	deps := api.Deps{DB: db, Blobs: blobs, Engine: eng}
	for _, o := range opts {
		o(&deps)
	}
	srv, err := api.New(cfg, deps)
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(traced(srv))
	tr := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	b.Cleanup(func() {
		tr.CloseIdleConnections()
		hs.Close()
		blobs.Close()
		db.Close()
	})
	return &benchServer{url: hs.URL, db: db, blobs: blobs, engine: eng, client: &http.Client{Transport: tr}}
}

// upload stores data for alice with a signed POST and returns its identifier.
func (s *benchServer) upload(b *testing.B, data []byte) string {
	b.Helper()
	u := s.url + "/users/alice/images"
	ts := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("X-Service-PublicKey", userKey)
	req.Header.Set("X-Service-Authenticate-Timestamp", ts)
	req.Header.Set("X-Service-Authenticate-Signature", hmacHex(userPriv, "POST|"+u+"|"+userKey+"|"+ts))
	res, err := s.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK {
		b.Fatalf("upload: %d %s", res.StatusCode, body)
	}
	var id string
	if i := bytes.Index(body, []byte(`"imageIdentifier":"`)); i >= 0 {
		rest := body[i+len(`"imageIdentifier":"`):]
		if j := bytes.IndexByte(rest, '"'); j > 0 {
			id = string(rest[:j])
		}
	}
	if id == "" {
		b.Fatalf("upload: no imageIdentifier in %s", body)
	}
	return id
}

// imageURL is a JPEG GET of id with the chain, signed with an access token.
func (s *benchServer) imageURL(id, spec string) string {
	u := s.url + "/users/alice/images/" + id + ".jpg?t[]=" + spec
	return u + "&accessToken=" + hmacHex(userPriv, u)
}

// fetch GETs u, reads the whole body and returns its length.
func (s *benchServer) fetch(u string) (int, error) {
	res, err := s.client.Get(u)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	n, err := io.Copy(io.Discard, res.Body)
	if err != nil {
		return 0, err
	}
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %d", u, res.StatusCode)
	}
	return int(n), nil
}

// inprocessNs keeps the last "inprocess" ns/op per case, for the ratio the
// "http" sibling reports (sub-benchmarks run in order; the last run of a
// benchmark function is the one with the final b.N).
var inprocessNs sync.Map

// runParallel runs op under b.RunParallel, each call with the next index
// (shared across workers, so in-flight calls use distinct sources), and
// returns the wall-clock ns per op.
func runParallel(b *testing.B, op func(i int) error) float64 {
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(int(next.Add(1) - 1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	return float64(elapsed.Nanoseconds()) / float64(b.N)
}

// BenchmarkHTTPvsProcess compares a full HTTP GET (routing, access token,
// SQLite row, file blob read, render, response) with Engine.Process on the
// same bytes, chain and parallelism.
func BenchmarkHTTPvsProcess(b *testing.B) {
	for _, wl := range benchWorkloads {
		for _, size := range benchSizes {
			name := wl.name + "/" + size.name
			b.Run(name, func(b *testing.B) {
				srcs := benchJPEGs(b, size.w, size.h)
				b.Run("inprocess", func(b *testing.B) {
					eng, err := engine.New(engine.Config{})
					if err != nil {
						b.Fatal(err)
					}
					chain, err := eng.ParseChain([]string{wl.spec})
					if err != nil {
						b.Fatal(err)
					}
					req := engine.Request{Chain: chain, Format: "jpg",
						Source: engine.Info{Mime: "image/jpeg", Ext: "jpg", Width: size.w, Height: size.h}}
					b.ReportAllocs()
					ns := runParallel(b, func(i int) error {
						_, err := eng.Process(context.Background(), srcs[i%len(srcs)], req)
						return err
					})
					inprocessNs.Store(name, ns)
					b.ReportMetric(1e9/ns, "ops/s")
				})
				httpRun := func(b *testing.B, parallelism int) {
					s := newBenchServer(b, false)
					urls := make([]string, len(srcs))
					for i, src := range srcs {
						urls[i] = s.imageURL(s.upload(b, src), wl.spec)
					}
					if _, err := s.fetch(urls[0]); err != nil { // warm the connection and the row
						b.Fatal(err)
					}
					b.ReportAllocs()
					b.SetParallelism(parallelism)
					ns := runParallel(b, func(i int) error {
						_, err := s.fetch(urls[i%len(urls)])
						return err
					})
					b.ReportMetric(1e9/ns, "ops/s")
					if v, ok := inprocessNs.Load(name); ok {
						in := v.(float64)
						b.ReportMetric(in, "inprocess-ns/op")
						b.ReportMetric(ns/in, "http/inprocess")
					}
				}
				// Same parallelism as inprocess: GOMAXPROCS requests in
				// flight, so any time a request spends outside the engine
				// leaves a core idle.
				b.Run("http", func(b *testing.B) { httpRun(b, 1) })
				// Twice as many requests in flight as engine slots (wrk
				// c=4 on 2 cores): the engine never waits for the HTTP
				// part, so what remains of the gap is CPU spent outside
				// libvips.
				b.Run("http-2xinflight", func(b *testing.B) { httpRun(b, 2) })
			})
		}
	}
}

// missNs keeps the last "miss" ns/op per size for the ratio "hit" reports.
var missNs sync.Map

// BenchmarkVariantCache measures a 200x200 thumbnail GET with cacheVariants
// on: "miss" deletes the image's cached variants before every request (the
// deletion is not timed), so each request looks the variant up, renders it
// and stores it; "hit" requests variants already cached. Both run
// b.RunParallel over the same benchDistinct images; "hit" reports miss/hit.
func BenchmarkVariantCache(b *testing.B) {
	const spec = "thumbnail:width=200,height=200"
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			srcs := benchJPEGs(b, size.w, size.h)
			s := newBenchServer(b, true)
			ids := make([]string, len(srcs))
			urls := make([]string, len(srcs))
			for i, src := range srcs {
				ids[i] = s.upload(b, src)
				urls[i] = s.imageURL(ids[i], spec)
			}
			b.Run("miss", func(b *testing.B) {
				// Serial: the untimed deletion between requests needs
				// StopTimer, which RunParallel does not allow per worker.
				b.ReportAllocs()
				var elapsed time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					img, err := s.db.Image(context.Background(), "alice", ids[i%len(ids)])
					if err != nil {
						b.Fatal(err)
					}
					if err := s.blobs.DeletePrefix(context.Background(), storage.VariantPrefix("alice", img.Identifier, img.BlobToken)); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					start := time.Now()
					if _, err := s.fetch(urls[i%len(urls)]); err != nil {
						b.Fatal(err)
					}
					elapsed += time.Since(start)
				}
				b.StopTimer()
				ns := float64(elapsed.Nanoseconds()) / float64(b.N)
				missNs.Store(size.name, ns)
				b.ReportMetric(1e9/ns, "ops/s")
			})
			b.Run("hit", func(b *testing.B) {
				for _, u := range urls { // fill the cache
					if _, err := s.fetch(u); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				var elapsed time.Duration
				for i := 0; i < b.N; i++ {
					start := time.Now()
					if _, err := s.fetch(urls[i%len(urls)]); err != nil {
						b.Fatal(err)
					}
					elapsed += time.Since(start)
				}
				b.StopTimer()
				ns := float64(elapsed.Nanoseconds()) / float64(b.N)
				b.ReportMetric(1e9/ns, "ops/s")
				if v, ok := missNs.Load(size.name); ok {
					b.ReportMetric(v.(float64), "miss-ns/op")
					b.ReportMetric(v.(float64)/ns, "miss/hit")
				}
			})
			b.Run("hit-parallel", func(b *testing.B) {
				b.ReportAllocs()
				ns := runParallel(b, func(i int) error {
					_, err := s.fetch(urls[i%len(urls)])
					return err
				})
				b.ReportMetric(1e9/ns, "ops/s")
			})
		})
	}
}
