package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
