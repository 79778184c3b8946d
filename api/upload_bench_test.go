package api_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"testing"
	"time"
)

// The write path over HTTP on the embedded default (SQLite and files):
// small images, so that the storage work, not decoding, dominates.
//
//	go test ./api -run '^$' -bench 'Benchmark(Upload|Delete)$' -benchtime 2000x

// BenchmarkUpload POSTs a new 64x64 PNG per op.
func BenchmarkUpload(b *testing.B) {
	s := newBenchServer(b, true)
	imgs := distinctPNGs(b, b.N)
	b.ResetTimer()
	for i := range b.N {
		s.upload(b, imgs[i])
	}
}

// BenchmarkDelete DELETEs one stored image per op (its blob is queued for
// the collector, which runs after the answer and not here).
func BenchmarkDelete(b *testing.B) {
	s := newBenchServer(b, true)
	ids := make([]string, b.N)
	for i, img := range distinctPNGs(b, b.N) {
		ids[i] = s.upload(b, img)
	}
	b.ResetTimer()
	for _, id := range ids {
		if code := s.del(b, id); code != http.StatusOK {
			b.Fatalf("delete %s: %d", id, code)
		}
	}
}

// distinctPNGs makes n different 64x64 PNGs.
func distinctPNGs(b *testing.B, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		img := image.NewNRGBA(image.Rect(0, 0, 64, 64))
		for y := range 64 {
			for x := range 64 {
				img.Set(x, y, color.NRGBA{uint8(x * 4), uint8(y * 4), uint8(i), 255})
			}
		}
		img.Set(0, 0, color.NRGBA{uint8(i >> 16), uint8(i >> 8), uint8(i), 255})
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			b.Fatal(err)
		}
		out[i] = buf.Bytes()
	}
	return out
}

// del sends a signed DELETE of alice's image id and returns the status.
func (s *benchServer) del(b *testing.B, id string) int {
	b.Helper()
	u := s.url + "/users/alice/images/" + id
	ts := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	req, err := http.NewRequest(http.MethodDelete, u, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("X-Service-PublicKey", userKey)
	req.Header.Set("X-Service-Authenticate-Timestamp", ts)
	req.Header.Set("X-Service-Authenticate-Signature", hmacHex(userPriv, fmt.Sprintf("DELETE|%s|%s|%s", u, userKey, ts)))
	res, err := s.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
