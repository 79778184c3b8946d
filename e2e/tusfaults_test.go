package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vitrine/vitrine/e2e/faultproxy"
)

// TestTusStoreFaultOnTheLastPatch: the blob store (versitygw, on its
// default storageTimeout of 5s) fails while the last PATCH of a resumable
// upload is under way, once frozen for 8 s (SIGSTOP) and once with its
// connections cut. The PATCH answers 503; the upload keeps every part it
// committed, so the client's retry (HEAD, then a PATCH of what HEAD says
// is missing, and HEAD again on 409) sends only bytes the server did not
// acknowledge and
// answers 201 with the image a POST of the file names; fsck is clean.
func TestTusStoreFaultOnTheLastPatch(t *testing.T) {
	gw := startVersitygw(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "scale")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "scalesecret")
	px := faultproxy.Start(t, gw.addr)
	storeURL := strings.Replace(gw.url(), gw.addr, px.Addr, 1)
	cfg := fmt.Sprintf("storage: %q\n", storeURL) + tokenKeysConfig + `  partSize: 1048576
limits:
  maxBodyBytes: 104857600
`
	s := startServer(t, cfg)
	for _, fault := range []struct {
		name         string
		break_, mend func()
	}{
		{"frozen", func() { gw.signal(t, syscall.SIGSTOP) }, func() { time.Sleep(8 * time.Second); gw.signal(t, syscall.SIGCONT) }},
		{"cut", func() { px.Set(faultproxy.Refuse) }, func() { px.Set(faultproxy.Pass) }},
	} {
		t.Run(fault.name, func(t *testing.T) {
			img := noisePNG(t, 1200, 1000, uint64(len(fault.name))) // about 3.6 MB: four parts
			tok := s.issueToken(t, map[string]any{"maxBytes": 100 << 20})
			path := tusCreate(t, s, tok.Token, len(img))
			first := len(img) / 3
			if r := tusPatch(t, s, path, tok.Token, 0, img[:first], nil); r.Status != http.StatusNoContent {
				t.Fatalf("first PATCH: %d %s", r.Status, r.Body)
			}
			// The last PATCH: half of its bytes go, then the store fails
			// once the server has committed a part of them.
			broken, mended := false, false
			mend := func() {
				if broken && !mended {
					mended = true
					fault.mend()
				}
			}
			defer mend() // when the test fails before
			last := tusPatch(t, s, path, tok.Token, first, img[first:], func(sent int) {
				if !broken && sent >= (len(img)-first)/2 {
					broken = true
					if err := waitForParts(gw, path, (first+1<<20-1)/(1<<20)+1); err != nil {
						t.Error(err)
					}
					fault.break_()
				}
			})
			if last.Status != http.StatusServiceUnavailable || last.Header.Get("Retry-After") == "" {
				t.Fatalf("last PATCH with the store %s: %d %v %s; want 503 with Retry-After", fault.name, last.Status, last.Header, last.Body)
			}
			mend()
			// As tus clients do: HEAD, PATCH the rest, and on 409 HEAD
			// again. A part whose write timed out inside the frozen store
			// may still land once it wakes, after the first HEAD, so the
			// offset can move forward once; it never moves back.
			var done *response
			offset, prev := 0, first
			for try := 1; ; try++ {
				head := tusHead(t, s, path, tok.Token)
				offset, _ = strconv.Atoi(head.Header.Get("Upload-Offset"))
				if head.Status != http.StatusOK || offset < prev || offset >= len(img) {
					t.Fatalf("HEAD %d after the fault: %d, offset %d of %d (the last PATCH began at %d, the previous HEAD said %d); want 200 and the parts it committed kept",
						try, head.Status, offset, len(img), first, prev)
				}
				prev = offset
				if done = tusPatch(t, s, path, tok.Token, offset, img[offset:], nil); done.Status != http.StatusConflict || try == 3 {
					break
				}
				t.Logf("PATCH %d from %d: 409 (%s); HEAD again", try, offset, done.Header.Get("X-Service-Error-Message"))
			}
			if offset == first {
				t.Fatalf("HEAD after the fault: offset %d, where the last PATCH began; want the parts it committed kept", offset)
			}
			if done.Status != http.StatusCreated || done.Header.Get("X-Service-ImageIdentifier") != md5Hex(img) {
				t.Fatalf("PATCH of the rest: %d %v %s", done.Status, done.Header, done.Body)
			}
			t.Logf("store %s: %d of %d bytes kept from the failed PATCH, %d sent again", fault.name, offset-first, len(img)-first, len(img)-offset)
			checkSameAsPost(t, s, md5Hex(img), img)
		})
	}
	s.Stop()
	if out, errOut, err := runCLI(t, nil, "fsck", "--config", s.Config, "--data", s.DataDir, "--grace", "0s"); err != nil {
		t.Fatalf("fsck: %v\n%s\n%s", err, out, errOut)
	}
}

// signal sends sig to versitygw.
func (v *versitygw) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := v.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// waitForParts waits until the bucket holds at least n parts of the
// upload at path.
func waitForParts(v *versitygw, path string, n int) error {
	dir := filepath.Join(v.root, v.bucket, "uploads", path[strings.LastIndexByte(path, '/')+1:], "part")
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if entries, _ := os.ReadDir(dir); len(entries) >= n {
			return nil
		}
	}
	return fmt.Errorf("the bucket never held %d parts under %s", n, dir)
}

// tusCreate creates a resumable upload of size bytes for alice with an
// upload token and returns its path.
func tusCreate(t *testing.T, s *server, token string, size int) string {
	t.Helper()
	r := s.do(t, http.MethodPost, s.URL+"/users/alice/uploads", nil, func(r *http.Request) {
		r.Header.Set("Tus-Resumable", "1.0.0")
		r.Header.Set("Upload-Length", strconv.Itoa(size))
		r.Header.Set("Authorization", "Bearer "+token)
	})
	wantStatus(t, "create the upload", r, http.StatusCreated)
	return strings.TrimPrefix(r.Header.Get("Location"), s.URL)
}

// tusHead asks for the offset of the upload at path.
func tusHead(t *testing.T, s *server, path, token string) *response {
	t.Helper()
	return s.do(t, http.MethodHead, s.URL+path, nil, func(r *http.Request) {
		r.Header.Set("Tus-Resumable", "1.0.0")
		r.Header.Set("Authorization", "Bearer "+token)
	})
}

// tusPatch sends body from offset, 64 KiB at a time; sent, when not nil,
// is called with the count of bytes sent after each. It streams the body
// (the API reference check of client would read it whole first).
func tusPatch(t *testing.T, s *server, path, token string, offset int, body []byte, sent func(int)) *response {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		for n := 0; n < len(body); {
			m := min(len(body)-n, 64<<10)
			if _, err := pw.Write(body[n : n+m]); err != nil {
				return // the server answered before reading it all
			}
			n += m
			if sent != nil {
				sent(n)
			}
		}
		_ = pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPatch, s.URL+path, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	req.Header.Set("Upload-Offset", strconv.Itoa(offset))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("PATCH %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &response{Method: http.MethodPatch, Status: resp.StatusCode, Header: resp.Header, Body: b}
}
