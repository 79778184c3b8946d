package storage_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/vitrine/vitrine/e2e/faultproxy"
	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/storage/storagetest"
)

// TestBlobTimeoutBoundsSilence: storageTimeout bounds how long the store
// may be silent, not how long an operation takes. On the file store and on
// S3 (versitygw), a 4 MiB blob read by a consumer that takes several
// timeouts to read it is read whole; on S3 behind a proxy that then stalls
// (a frozen store), a read, a write and a listing each fail with an
// *UnavailableError naming the timeout. A resumable upload's part is
// written whole from a client pausing longer than the timeout, and not at
// all once the store stalls.
func TestBlobTimeoutBoundsSilence(t *testing.T) {
	const timeout = 300 * time.Millisecond
	data := make([]byte, 4<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	slowRead := func(t *testing.T, b *storage.Blobs) {
		t.Helper()
		// The blob is written under the default bound: a loaded store
		// may take longer than the test's after the last byte, and the
		// write is not what is measured here.
		b.SetTimeout(storage.DefaultBlobTimeout)
		if err := b.Put(t.Context(), "slow/blob", data); err != nil {
			t.Fatal(err)
		}
		b.SetTimeout(timeout)
		r, err := b.Open(t.Context(), "slow/blob")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var got bytes.Buffer
		buf := make([]byte, 1<<20)
		for {
			n, err := r.Read(buf)
			got.Write(buf[:n])
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("a slow consumer's read after %d bytes: %v", got.Len(), err)
			}
			time.Sleep(timeout / 2) // 4 reads or more: twice the timeout in all
		}
		if !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("read %d bytes, want the %d written", got.Len(), len(data))
		}
	}
	t.Run("file", func(t *testing.T) {
		b := openBlobs(t, "file://"+t.TempDir())
		b.SetTimeout(timeout)
		slowRead(t, b)
	})
	t.Run("s3", func(t *testing.T) {
		raw := storagetest.S3URL(t) // skips without a server
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		endpoint, err := url.Parse(q.Get("endpoint"))
		if err != nil {
			t.Fatal(err)
		}
		px := faultproxy.Start(t, endpoint.Host)
		endpoint.Host = px.Addr
		q.Set("endpoint", endpoint.String())
		u.RawQuery = q.Encode()
		b := openBlobs(t, u.String())
		b.SetTimeout(timeout)
		slowRead(t, b)
		// A client that pauses longer than the timeout between the
		// chunks of an upload's part is not taken for a silent store.
		parts := storage.NewResumable(b, 1<<20)
		if n, err := parts.Write(t.Context(), "slow", 0, &pausing{r: bytes.NewReader(data[:3<<19]), pause: 2 * timeout}); err != nil || n != 3<<19 {
			t.Fatalf("a paused client's upload wrote %d bytes: %v", n, err)
		}

		px.Set(faultproxy.Stall)
		defer px.Set(faultproxy.Pass)
		for name, op := range map[string]func() error{
			"get":  func() error { _, err := b.Get(t.Context(), "slow/blob"); return err },
			"put":  func() error { return b.Put(t.Context(), "slow/other", data) },
			"part": func() error { _, err := parts.Write(t.Context(), "stalled", 0, bytes.NewReader(data)); return err },
			"list": func() error { return b.List(t.Context(), "slow/", func(storage.BlobInfo) error { return nil }) },
		} {
			err := op()
			var unavailable *storage.UnavailableError
			if !errors.As(err, &unavailable) || unavailable.Timeout != timeout {
				t.Errorf("%s with the store stalled: %v; want an *UnavailableError naming the %s bound", name, err, timeout)
			}
		}
	})
}

// pausing is a client's body that waits pause before each 256 KiB.
type pausing struct {
	r     io.Reader
	pause time.Duration
	read  int
}

func (p *pausing) Read(b []byte) (int, error) {
	if p.read%(256<<10) == 0 {
		time.Sleep(p.pause)
	}
	n, err := p.r.Read(b[:min(len(b), 256<<10-p.read%(256<<10))])
	p.read += n
	return n, err
}
