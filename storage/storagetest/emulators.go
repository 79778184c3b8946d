package storagetest

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// The emulators the GCS and Azure blob tests start, at the versions the
// Makefile's test-deps installs. A test finds each binary through its
// variable (a path), or else on PATH, and skips naming what to install
// when it finds neither.
const (
	FakeGCSServerVersion = "v1.56.1"
	AzuriteVersion       = "3.35.0"

	envFakeGCS = "VITRINE_TEST_FAKE_GCS_SERVER"
	envAzurite = "VITRINE_TEST_AZURITE"
)

// Azurite's well-known development account (its documentation publishes
// the key; it opens nothing outside the emulator).
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// emulatorBucket is the bucket (GCS) or container (Azure) the emulators
// are given.
const emulatorBucket = "vitrine-test"

// FakeGCS starts fake-gcs-server on a free loopback port for the rest of
// the test, creates a bucket on it, points STORAGE_EMULATOR_HOST at it
// (the variable gocloud.dev's gcsblob reads) and returns the bucket's
// gs:// URL. Add a fresh key prefix per store with FreshPrefix. It skips
// when fake-gcs-server is not installed. It sets the environment, so the
// test must not be parallel.
func FakeGCS(t testing.TB) string {
	t.Helper()
	bin := emulatorBinary(t, envFakeGCS, "fake-gcs-server",
		"go install github.com/fsouza/fake-gcs-server@"+FakeGCSServerVersion)
	port := freePort(t)
	addr := "127.0.0.1:" + port
	startEmulator(t, "fake-gcs-server", exec.Command(bin, "-backend", "memory", "-scheme", "http",
		"-host", "127.0.0.1", "-port", port, "-public-host", addr, "-external-url", "http://"+addr,
		"-log-level", "warn"), addr)
	body := `{"name":"` + emulatorBucket + `"}`
	resp, err := http.Post("http://"+addr+"/storage/v1/b?project=test", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("fake-gcs-server: create bucket: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("fake-gcs-server: create bucket: %s", resp.Status)
	}
	t.Setenv("STORAGE_EMULATOR_HOST", addr)
	return "gs://" + emulatorBucket
}

// Azurite starts Azurite's blob service on a free loopback port for the
// rest of the test, creates a container on it, sets AZURE_STORAGE_ACCOUNT
// and AZURE_STORAGE_KEY to Azurite's development account and returns the
// container's azblob:// URL. Add a fresh key prefix per store with
// FreshPrefix. It skips when Azurite is not installed. It sets the
// environment, so the test must not be parallel.
func Azurite(t testing.TB) string {
	t.Helper()
	bin := emulatorBinary(t, envAzurite, "azurite-blob", "npm install -g azurite@"+AzuriteVersion)
	port := freePort(t)
	addr := "127.0.0.1:" + port
	// --skipApiVersionCheck: the Go SDK may speak a newer API version than
	// this Azurite release knows; the operations vitrine uses are older.
	startEmulator(t, "azurite", exec.Command(bin, "--blobHost", "127.0.0.1", "--blobPort", port,
		"--inMemoryPersistence", "--skipApiVersionCheck", "--silent"), addr)
	t.Setenv("AZURE_STORAGE_ACCOUNT", AzuriteAccount)
	t.Setenv("AZURE_STORAGE_KEY", AzuriteKey)
	cred, err := azblob.NewSharedKeyCredential(AzuriteAccount, AzuriteKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(
		"http://"+addr+"/"+AzuriteAccount+"/"+emulatorBucket, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Create(ctx, nil); err != nil {
		t.Fatalf("azurite: create container: %v", err)
	}
	return "azblob://" + emulatorBucket + "?protocol=http&localemu=true&domain=" + addr
}

// FreshPrefix adds a fresh key prefix to a bucket URL, so each store
// opened on one bucket starts empty.
func FreshPrefix(bucketURL string) string {
	return WithParam(bucketURL, "prefix", UniqueName()+"/")
}

// emulatorBinary returns the path of an emulator: the variable env, or
// name on PATH; it skips with the install command when there is neither.
func emulatorBinary(t testing.TB, env, name, install string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("%s not found: run `make test-deps` (installs it and `make test` passes it in %s), "+
		"or `%s` and put it on PATH", name, env, install)
	return ""
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// startEmulator runs cmd until the test ends and waits until addr accepts
// connections; it fails the test, with the emulator's output, when the
// emulator exits or does not listen within 30 seconds.
func startEmulator(t testing.TB, name string, cmd *exec.Cmd, addr string) {
	t.Helper()
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("%s exited before listening on %s:\n%s", name, addr, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s within 30s:\n%s", name, addr, out.String())
		}
	}
}

// syncBuffer collects an emulator's output for a failure message.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
