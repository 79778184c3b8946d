package storage_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/storage/storagetest"
)

func TestFileBlobs(t *testing.T) {
	storagetest.TestBlobs(t, func(t *testing.T) *storage.Blobs {
		dir := filepath.Join(t.TempDir(), "blobs", "nested")
		b := openBlobs(t, "file://"+dir)
		t.Cleanup(func() {
			// No sidecar or temporary files are left behind.
			filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() && (filepath.Ext(p) == ".attrs" || filepath.Ext(p) == ".tmp") {
					t.Errorf("stray file %s", p)
				}
				return nil
			})
		})
		return b
	})
}

func TestMemBlobs(t *testing.T) {
	storagetest.TestBlobs(t, func(t *testing.T) *storage.Blobs { return openBlobs(t, "mem://") })
}

// TestS3Blobs runs against an S3-compatible server. Locally, with versitygw:
//
//	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
//	mkdir -p /tmp/vgw/vitrine-test
//	ROOT_ACCESS_KEY=test ROOT_SECRET_KEY=testsecret versitygw --port 127.0.0.1:7070 posix /tmp/vgw &
//	AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=testsecret \
//	VITRINE_TEST_S3='s3://vitrine-test?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true' \
//	go test ./storage/ -run S3
//
// (With the posix backend a bucket is a directory under the root.) Each
// open uses a fresh key prefix of that bucket.
func TestS3Blobs(t *testing.T) {
	storagetest.S3URL(t) // skips without a server
	storagetest.TestBlobs(t, func(t *testing.T) *storage.Blobs {
		return openBlobs(t, storagetest.S3URL(t))
	})
}

// TestGCSBlobs runs against fake-gcs-server, which it starts (make
// test-deps installs it; the test skips without it).
func TestGCSBlobs(t *testing.T) {
	bucket := storagetest.FakeGCS(t)
	storagetest.TestBlobs(t, func(t *testing.T) *storage.Blobs {
		return openBlobs(t, storagetest.FreshPrefix(bucket))
	})
}

// TestAzureBlobs runs against Azurite, which it starts (make test-deps
// installs it; the test skips without it).
func TestAzureBlobs(t *testing.T) {
	container := storagetest.Azurite(t)
	storagetest.TestBlobs(t, func(t *testing.T) *storage.Blobs {
		return openBlobs(t, storagetest.FreshPrefix(container))
	})
}

func openBlobs(t *testing.T, u string) *storage.Blobs {
	t.Helper()
	b, err := storage.OpenBlobs(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

// TestEmulatorPins keeps the Makefile installing the emulator versions the
// skip messages name.
func TestEmulatorPins(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, pin := range []string{
		"FAKE_GCS_SERVER_VERSION = " + storagetest.FakeGCSServerVersion + "\n",
		"AZURITE_VERSION = " + storagetest.AzuriteVersion + "\n",
	} {
		if !strings.Contains(string(mk), pin) {
			t.Errorf("Makefile does not pin %q", strings.TrimSpace(pin))
		}
	}
}

// TestListWhileWriting: a folder's listing goes on while blobs are
// written (each through a temporary file renamed into place) and deleted
// under it, as a backup's or a copy's does on a serving store.
func TestListWhileWriting(t *testing.T) {
	ctx := context.Background()
	b, err := storage.OpenBlobs(ctx, "file://"+filepath.ToSlash(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 200 {
		if err := b.Put(ctx, fmt.Sprintf("keep/%03d", i), []byte("kept")); err != nil {
			t.Fatal(err)
		}
	}
	// Key order, as every store lists: a folder "a" sorts as "a/".
	for _, k := range []string{"order/a/b", "order/a-b", "order/a0"} {
		if err := b.Put(ctx, k, []byte("o")); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	if err := b.List(ctx, "order/", func(o storage.BlobInfo) error { order = append(order, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, " ") != "order/a-b order/a/b order/a0" {
		t.Fatalf("listed in the order %v", order)
	}
	// The time fn takes is not the store's: a slow consumer is not a
	// silent folder.
	b.SetTimeout(50 * time.Millisecond)
	if err := b.List(ctx, "order/", func(storage.BlobInfo) error { time.Sleep(100 * time.Millisecond); return nil }); err != nil {
		t.Fatalf("a listing whose consumer outlasts the timeout: %v", err)
	}
	b.SetTimeout(storage.DefaultBlobTimeout)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("churn/%d/%d", w, i%50)
				_ = b.Put(ctx, key, bytes.Repeat([]byte{'x'}, 4096))
				_ = b.Delete(ctx, key)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for range 100 {
		kept := 0
		err := b.List(ctx, "", func(o storage.BlobInfo) error {
			if strings.HasPrefix(o.Key, "keep/") {
				kept++
			}
			return nil
		})
		if err != nil {
			t.Fatalf("list while writing: %v", err)
		}
		if kept != 200 {
			t.Fatalf("listed %d of the 200 blobs no one touched", kept)
		}
	}
}
