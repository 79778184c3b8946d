package api_test

import (
	"bytes"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
)

// Resumable uploads against plain POSTs of the same 60 MB and 200 MB PNGs
// on loopback (SQLite and files), and the memory an upload in flight holds
// (e2e/README.md, Performance):
//
//	go test ./api -run '^$' -bench 'BenchmarkLargeUpload|BenchmarkUploadMemory' -benchtime 3x

// largeSize is an image size of the large-upload benchmarks: w x h pixels
// as an uncompressed opaque PNG (RGB) weigh 3*w*h bytes.
type largeSize struct {
	name string
	w, h int
}

var (
	mb60  = largeSize{"60MB", 4000, 5000}
	mb200 = largeSize{"200MB", 8000, 8334}
)

// largePNG is a 60 MB PNG of noise, stored uncompressed; seed makes it
// distinct.
func largePNG(b *testing.B, seed uint64) []byte { return largePNGOf(b, mb60, seed) }

// largePNGOf is a PNG of noise of size z, stored uncompressed.
func largePNGOf(b *testing.B, z largeSize, seed uint64) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, z.w, z.h))
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
		if i%4 == 3 {
			img.Pix[i] = 255 // opaque: encoded as RGB
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// largeServer is a server whose limits take 200 MB uploads.
func largeServer(b *testing.B) (string, *http.Client) {
	b.Helper()
	s := newBenchServerWith(b, func(cfg *api.Config) { cfg.Limits.MaxBodyBytes = 256 << 20 })
	return s.url, s.client
}

// send sends a request signed as alice and returns its status and
// headers.
func send(b *testing.B, c *http.Client, method, u string, body io.Reader, size int64, headers ...string) (int, http.Header) {
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		b.Error(err)
		return 0, nil
	}
	req.ContentLength = size
	ts := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	req.Header.Set("X-Service-PublicKey", userKey)
	req.Header.Set("X-Service-Authenticate-Timestamp", ts)
	req.Header.Set("X-Service-Authenticate-Signature", hmacHex(userPriv, method+"|"+u+"|"+userKey+"|"+ts))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		b.Error(err)
		return 0, nil
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, res.Header
}

// tusSend creates a resumable upload of size bytes and sends body (n
// bytes of it) in one PATCH; it returns the PATCH's status.
func tusSend(b *testing.B, c *http.Client, base string, size int64, body io.Reader, n int64) int {
	code, h := send(b, c, http.MethodPost, base+"/users/alice/uploads", nil, 0,
		"Tus-Resumable", "1.0.0", "Upload-Length", strconv.FormatInt(size, 10))
	if code != http.StatusCreated {
		b.Errorf("create: %d", code)
		return code
	}
	code, _ = send(b, c, http.MethodPatch, h.Get("Location"), body, n,
		"Tus-Resumable", "1.0.0", "Upload-Offset", "0", "Content-Type", "application/offset+octet-stream")
	return code
}

// BenchmarkLargeUpload stores a new 60 MB or 200 MB PNG per op, with a
// POST or as a resumable upload sent in one PATCH.
func BenchmarkLargeUpload(b *testing.B) {
	for _, z := range []largeSize{mb60, mb200} {
		for _, mode := range []string{"post", "tus"} {
			b.Run(z.name+"/"+mode, func(b *testing.B) { largeUpload(b, z, mode) })
		}
	}
}

// largeUpload is one case of BenchmarkLargeUpload.
func largeUpload(b *testing.B, z largeSize, mode string) {
	base, c := largeServer(b)
	b.SetBytes(int64(3 * z.w * z.h))
	for i := range b.N {
		b.StopTimer()
		img := largePNGOf(b, z, uint64(i+1))
		b.StartTimer()
		var code int
		if mode == "post" {
			code, _ = send(b, c, http.MethodPost, base+"/users/alice/images", bytes.NewReader(img), int64(len(img)))
		} else {
			code = tusSend(b, c, base, int64(len(img)), bytes.NewReader(img), int64(len(img)))
		}
		if code != http.StatusCreated {
			b.Fatalf("%s: %d", mode, code)
		}
	}
}

// noise is an endless reader of pseudo-random bytes that holds no more
// than the caller's buffer.
type noise struct{ r *rand.Rand }

func (n noise) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(n.r.Uint32())
	}
	return len(p), nil
}

// BenchmarkUploadMemory sends 8 uploads of 60 MB at once and reports the
// peak of the heap above what it was before, per upload: resumable
// uploads send all but the last byte (the parts, not the image, are what
// is held), POSTs a whole image each.
func BenchmarkUploadMemory(b *testing.B) {
	const uploads = 8
	const size = 60 << 20
	for _, mode := range []string{"post", "tus"} {
		b.Run(mode, func(b *testing.B) {
			base, c := largeServer(b)
			var imgs [][]byte
			if mode == "post" {
				for i := range uploads {
					imgs = append(imgs, largePNG(b, uint64(100+i)))
				}
			}
			var peak uint64
			for range b.N {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				before := ms.HeapInuse // the client's images included
				var max atomic.Uint64
				stop := make(chan struct{})
				sampled := make(chan struct{})
				go func() {
					defer close(sampled)
					var ms runtime.MemStats
					for {
						runtime.ReadMemStats(&ms)
						if ms.HeapInuse > max.Load() {
							max.Store(ms.HeapInuse)
						}
						select {
						case <-stop:
							return
						case <-time.After(5 * time.Millisecond):
						}
					}
				}()
				var wg sync.WaitGroup
				for i := range uploads {
					wg.Go(func() {
						if mode == "post" {
							send(b, c, http.MethodPost, base+"/users/alice/images", bytes.NewReader(imgs[i]), int64(len(imgs[i])))
							return
						}
						src := io.LimitReader(noise{rand.New(rand.NewPCG(uint64(i), 1))}, size-1)
						if code := tusSend(b, c, base, size, src, size-1); code != http.StatusNoContent {
							b.Errorf("PATCH: %d", code)
						}
					})
				}
				wg.Wait()
				close(stop)
				<-sampled
				if m := max.Load(); m > before && m-before > peak {
					peak = m - before
				}
			}
			b.ReportMetric(float64(peak)/uploads/(1<<20), "peak-heap-MiB/upload")
		})
	}
}
