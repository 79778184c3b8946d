// Package e2e holds black-box tests of the built vitrine binary: each test
// starts `vitrine serve` on a free loopback port with its own configuration
// and data directory and talks to it over HTTP only.
//
// TestMain builds the binary once from the repository root (or uses
// VITRINE_E2E_BIN when set). The backend tests run against PostgreSQL,
// MariaDB and S3 when VITRINE_TEST_POSTGRES, VITRINE_TEST_MYSQL and
// VITRINE_TEST_S3 are set, and skip naming the variable otherwise.
package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // decodeSize reads GIF
	"image/jpeg"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api/openapitest"
)

// binary is the vitrine executable under test.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if b := os.Getenv("VITRINE_E2E_BIN"); b != "" {
		binary = b
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "vitrine-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "vitrine")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building vitrine:", err)
		return 1
	}
	return m.Run()
}

// syncBuffer collects a process's output; safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// server is a running `vitrine serve`.
type server struct {
	URL     string // http://127.0.0.1:<port>, no trailing slash
	DataDir string
	Config  string // path of the configuration file
	Stdout  *syncBuffer
	Stderr  *syncBuffer
	// HeaderPrefix is the prefix of response headers the server was
	// configured with (X-Service unless the config says otherwise).
	HeaderPrefix string

	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error
	stopped bool
}

// startServer writes yamlConfig, starts vitrine on a free port with a fresh
// data directory and waits for GET /status to answer. The process is
// stopped when the test ends.
func startServer(t *testing.T, yamlConfig string) *server {
	t.Helper()
	return startServerData(t, yamlConfig, t.TempDir())
}

// startServerData is startServer with a given data directory, so a test can
// restart a server on the same data.
func startServerData(t *testing.T, yamlConfig, dataDir string) *server {
	t.Helper()
	var lastErr error
	for range 3 { // a free port may be taken between probing and listening
		s, err := tryStart(t, yamlConfig, dataDir)
		if err == nil {
			return s
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("starting vitrine: %v", lastErr)
	return nil
}

var headerPrefixLine = regexp.MustCompile(`(?m)^headerPrefix:\s*["']?([A-Za-z0-9-]+)`)

func tryStart(t *testing.T, yamlConfig, dataDir string) (*server, error) {
	t.Helper()
	return tryStartAt(t, yamlConfig, dataDir, freeAddr(t))
}

// tryStartAt starts vitrine listening on addr (a restart on the address
// a client knows).
func tryStartAt(t *testing.T, yamlConfig, dataDir, addr string) (*server, error) {
	t.Helper()
	cfgDir := t.TempDir()
	cfg := filepath.Join(cfgDir, "vitrine.yaml")
	if err := os.WriteFile(cfg, []byte(yamlConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &server{URL: "http://" + addr, DataDir: dataDir, Config: cfg, Stdout: &syncBuffer{}, Stderr: &syncBuffer{},
		HeaderPrefix: "X-Service", done: make(chan struct{})}
	if m := headerPrefixLine.FindStringSubmatch(yamlConfig); m != nil {
		s.HeaderPrefix = strings.TrimSuffix(m[1], "-")
	}
	s.cmd = exec.Command(binary, "serve", "--config", cfg, "--data", dataDir, "--listen", addr)
	s.cmd.Env = childEnv()
	s.cmd.Stdout, s.cmd.Stderr = s.Stdout, s.Stderr
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("vitrine stdout:\n%s\nvitrine stderr:\n%s", s.Stdout, s.Stderr)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("vitrine exited (%v) before answering:\nstdout:\n%s\nstderr:\n%s", s.exitErr, s.Stdout, s.Stderr)
		default:
		}
		resp, err := http.Get(s.URL + "/status")
		if err == nil {
			resp.Body.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("GET /status did not answer within 60s: %v\nstderr:\n%s", err, s.Stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// childEnv is the test's environment without VITRINE_* variables, which the
// server would read as configuration.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VITRINE_") {
			env = append(env, kv)
		}
	}
	return env
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (s *server) Stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// waitOutput waits until the server's stdout contains substr (output is
// copied from a pipe, so it may lag behind the process a little).
func (s *server) waitOutput(t *testing.T, substr string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out := s.Stdout.String()
		if strings.Contains(out, substr) || time.Now().After(deadline) {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// adminKeyBanner starts the message a first start prints with its key pair.
const adminKeyBanner = "Created an admin key pair"

var (
	adminPublicLine  = regexp.MustCompile(`(?m)^\s*public key:\s*(\S+)\s*$`)
	adminPrivateLine = regexp.MustCompile(`(?m)^\s*private key:\s*(\S+)\s*$`)
)

// parseAdminKey extracts the key pair a first start prints:
//
//	Created an admin key pair (shown only this once; ...):
//	  public key:  admin
//	  private key: 5f0c...
func parseAdminKey(out string) (k key, ok bool) {
	i := strings.Index(out, adminKeyBanner)
	if i < 0 {
		return key{}, false
	}
	out = out[i:]
	pub := adminPublicLine.FindStringSubmatch(out)
	priv := adminPrivateLine.FindStringSubmatch(out)
	if pub == nil || priv == nil {
		return key{}, false
	}
	return key{Public: pub[1], Private: priv[1]}, true
}

// key is a public/private key pair.
type key struct {
	Public, Private string
}

// hmacHex is lower-case hex HMAC-SHA256.
func hmacHex(privateKey, data string) string {
	m := hmac.New(sha256.New, []byte(privateKey))
	m.Write([]byte(data))
	return hex.EncodeToString(m.Sum(nil))
}

// pathUser is the <user> of a /users/<user>/... path, or "".
func pathUser(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(parts) >= 2 && parts[0] == "users" {
		return strings.TrimSuffix(parts[1], ".json")
	}
	return ""
}

// signRead returns rawURL with its access token, as README describes: when
// the key is not named like the user in the path (or the path has no user),
// `publicKey=<key>` goes into the query first; the token is the HMAC of the
// whole URL with its query URL-decoded.
func signRead(rawURL string, k key) string {
	if pathUser(rawURL) != k.Public {
		rawURL = addParam(rawURL, "publicKey="+k.Public)
	}
	signed := rawURL
	if base, q, ok := strings.Cut(rawURL, "?"); ok {
		if d, err := url.QueryUnescape(q); err == nil {
			signed = base + "?" + d
		}
	}
	return addParam(rawURL, "accessToken="+hmacHex(k.Private, signed))
}

func addParam(rawURL, param string) string {
	if strings.Contains(rawURL, "?") {
		return rawURL + "&" + param
	}
	return rawURL + "?" + param
}

// signWrite sets the headers of a signed write: HMAC-SHA256 over
// `METHOD|URL|publicKey|timestamp`.
func signWrite(req *http.Request, k key) {
	ts := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	u := req.URL.String()
	req.Header.Set("X-Service-PublicKey", k.Public)
	req.Header.Set("X-Service-Authenticate-Timestamp", ts)
	req.Header.Set("X-Service-Authenticate-Signature", hmacHex(k.Private, req.Method+"|"+u+"|"+k.Public+"|"+ts))
}

// response is a finished HTTP exchange.
type response struct {
	Method string
	Status int
	Header http.Header
	Body   []byte
}

func (r *response) String() string {
	b := r.Body
	if len(b) > 512 {
		b = b[:512]
	}
	return fmt.Sprintf("%d %q", r.Status, b)
}

// JSON decodes the body into v, failing the test if it is not JSON.
func (r *response) JSON(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("response %s: body is not the expected JSON: %v", r, err)
	}
}

// errorMessage is error.message of a JSON error body ("" if there is none).
func (r *response) errorMessage() string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &e)
	return e.Error.Message
}

// client sends the tests' requests; every exchange outside the admin UI is
// validated against the API reference, api/openapi.yaml, and a mismatch is
// the request's error, naming the route and what differs.
var client = &http.Client{Timeout: 60 * time.Second, Transport: checkedTransport()}

func checkedTransport() http.RoundTripper {
	c, err := openapitest.New("/admin")
	if err != nil {
		panic(err)
	}
	return c.Transport(nil)
}

// do sends a request to the server. path is absolute ("/users/...") or a
// full URL.
func (s *server) do(t *testing.T, method, path string, body []byte, prepare func(*http.Request)) *response {
	t.Helper()
	u := path
	if strings.HasPrefix(path, "/") {
		u = s.URL + path
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(req)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, u, err)
	}
	return &response{Method: method, Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// read sends a GET (or HEAD) carrying an access token of k.
func (s *server) read(t *testing.T, method, path string, k key) *response {
	t.Helper()
	return s.do(t, method, signRead(s.URL+path, k), nil, nil)
}

// get is read with GET.
func (s *server) get(t *testing.T, path string, k key) *response {
	t.Helper()
	return s.read(t, http.MethodGet, path, k)
}

// write sends a write signed by k.
func (s *server) write(t *testing.T, method, path string, body []byte, k key) *response {
	t.Helper()
	return s.do(t, method, s.URL+path, body, func(r *http.Request) {
		if body != nil && (len(body) == 0 || body[0] == '{' || body[0] == '[') {
			r.Header.Set("Content-Type", "application/json")
		}
		signWrite(r, k)
	})
}

// writeJSON is write with v encoded as JSON.
func (s *server) writeJSON(t *testing.T, method, path string, v any, k key) *response {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return s.write(t, method, path, b, k)
}

// wantStatus fails the test unless r has the status.
func wantStatus(t *testing.T, what string, r *response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: got %s, want status %d", what, r, status)
	}
}

// checkStatus is wantStatus that lets the test go on.
func checkStatus(t *testing.T, what string, r *response, status int) bool {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: got %s, want status %d", what, r, status)
		return false
	}
	return true
}

// checkError checks an error response: status, error.message in the JSON
// body (but for HEAD) and the <prefix>-Error-Message header.
func (s *server) checkError(t *testing.T, what string, r *response, status int, message string) bool {
	t.Helper()
	ok := true
	// HEAD answers carry no body: the header has the message.
	if r.Status != status || (r.Method != http.MethodHead && r.errorMessage() != message) {
		t.Errorf("%s: got %s, want %d with error.message %q", what, r, status, message)
		ok = false
	}
	if h := r.Header.Get(s.HeaderPrefix + "-Error-Message"); h != message {
		t.Errorf("%s: %s-Error-Message = %q, want %q", what, s.HeaderPrefix, h, message)
		ok = false
	}
	return ok
}

// testPNG is a deterministic w x h PNG; seed varies the pixels so that
// different seeds give different identifiers.
func testPNG(t *testing.T, w, h int, seed byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, testPicture(w, h, seed)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// testJPEG is testPNG's picture as a q90 JPEG.
func testJPEG(t *testing.T, w, h int, seed byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, testPicture(w, h, seed), &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func testPicture(w, h int, seed byte) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{R: byte(x * 255 / w), G: byte(y * 255 / h), B: seed, A: 255})
		}
	}
	return img
}

// decodeSize decodes an image body and returns its format and size.
func decodeSize(t *testing.T, what string, body []byte) (format string, w, h int) {
	t.Helper()
	cfg, format, err := image.DecodeConfig(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: body is not an image: %v (%d bytes)", what, err, len(body))
	}
	return format, cfg.Width, cfg.Height
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// uniqueName is a fresh lower-case name, for users, schemas and databases
// shared between runs.
func uniqueName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return prefix + hex.EncodeToString(b)
}
