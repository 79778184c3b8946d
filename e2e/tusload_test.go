package e2e

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestTusLargeBesidePostLoad: on the default settings but the body limit
// (parts in the blob store, storageTimeout 5s), tus-js-client uploads a
// 200 MB PNG while four clients keep POSTing 12 MB images. The upload
// completes with the bytes of the file, every POST is stored, and fsck
// finds nothing left behind.
func TestTusLargeBesidePostLoad(t *testing.T) {
	cfg := tokenKeysConfig + `limits:
  maxBodyBytes: 268435456
`
	s := startServer(t, cfg)
	file, img := noiseFile(t, 8000, 8334) // 200 MB
	tok := s.issueToken(t, map[string]any{"maxBytes": 256 << 20})

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				code, err := postImage(s, randomPNG(2000, 2000))
				mu.Lock()
				statuses[code]++
				mu.Unlock()
				if err != nil {
					t.Errorf("POST %d of client %d: %v", i, w, err)
					return
				}
			}
		})
	}
	c := startTusClient(t, file, s.URL+"/users/alice/uploads", tok.Token, "", false)
	id, resumes := c.untilDone(t)
	close(stop)
	wg.Wait()
	t.Logf("POSTs beside the upload: %v; resumes: %v", statuses, resumes)
	for code, n := range statuses {
		if code != http.StatusCreated {
			t.Errorf("%d POSTs answered %d", n, code)
		}
	}
	if statuses[http.StatusCreated] == 0 {
		t.Error("no POST was stored while the upload ran")
	}
	checkSameAsPost(t, s, id, img)
	checkClean(t, s, s.DataDir)
}

// noiseFile writes a w x h PNG of opaque noise, stored uncompressed (3
// bytes a pixel), and returns its path and bytes.
func noiseFile(t *testing.T, w, h int) (string, []byte) {
	t.Helper()
	b := randomPNG(w, h)
	path := filepath.Join(t.TempDir(), "noise.png")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, b
}

// randomPNG is a w x h PNG of opaque noise, stored uncompressed.
func randomPNG(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	_, _ = rand.Read(img.Pix)
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	var b bytes.Buffer
	_ = (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&b, img)
	return b.Bytes()
}

// postImage stores body for alice with a plain POST signed by the backend
// key and returns the status; the error says what went wrong on the way
// or in a 5xx answer. It is safe in a goroutine (it never stops the test).
func postImage(s *server, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, s.URL+"/users/alice/images", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	signWrite(req, backendKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 500 {
		return res.StatusCode, fmt.Errorf("%d %s", res.StatusCode, msg)
	}
	return res.StatusCode, nil
}
