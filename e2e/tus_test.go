package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tusJSClientVersion is the tus-js-client the Makefile's test-deps installs.
const tusJSClientVersion = "4.3.1"

// tusClientScript uploads a file with tus-js-client: argv is the file,
// the endpoint, the upload token, and the URL of an upload to resume (or
// ""). It prints "url <upload URL>" once known, "progress <bytes>" as
// bytes go out, "resumed <offset>" for each HEAD answer, and at the end
// "done <image identifier>" (or "error <message>" and exits 1).
const tusClientScript = `
const tus = require('tus-js-client');
const fs = require('fs');
const [file, endpoint, token, uploadUrl, retries] = process.argv.slice(2);
let id = '', printedUrl = false, last = 0;
const upload = new tus.Upload(fs.createReadStream(file), {
  endpoint: uploadUrl ? null : endpoint,
  uploadUrl: uploadUrl || null,
  uploadSize: fs.statSync(file).size,
  headers: {Authorization: 'Bearer ' + token},
  retryDelays: retries === '0' ? [] : Array(60).fill(500),
  storeFingerprintForResuming: false,
  onAfterResponse: (req, res) => {
    if (req.getMethod() === 'HEAD') console.log('resumed ' + res.getHeader('Upload-Offset'));
    const h = res.getHeader('X-Service-ImageIdentifier');
    if (h) id = h;
  },
  onProgress: (sent) => {
    if (!printedUrl && upload.url) { console.log('url ' + upload.url); printedUrl = true; }
    if (sent - last >= 1 << 20) { console.log('progress ' + sent); last = sent; }
  },
  onSuccess: () => { console.log('done ' + id); },
  onError: (e) => { console.log('error ' + String(e).split('\n')[0]); process.exit(1); },
});
upload.start();
`

// tusClient is a running tus-js-client upload.
type tusClient struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan error
}

// startTusClient runs tusClientScript with Node, or skips when Node or
// tus-js-client is missing (make test-deps installs it).
func startTusClient(t *testing.T, file, endpoint, token, uploadURL string, retry bool) *tusClient {
	t.Helper()
	home, _ := os.UserHomeDir()
	mods := filepath.Join(home, ".cache", "vitrine-test-tools", "tus-js-client-"+tusJSClientVersion, "node_modules")
	if _, err := os.Stat(filepath.Join(mods, "tus-js-client")); err != nil {
		t.Skip("tus-js-client is not installed (make test-deps)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	script := filepath.Join(t.TempDir(), "upload.js")
	if err := os.WriteFile(script, []byte(tusClientScript), 0o600); err != nil {
		t.Fatal(err)
	}
	retries := "0"
	if retry {
		retries = "60"
	}
	c := &tusClient{cmd: exec.Command(node, script, file, endpoint, token, uploadURL, retries),
		lines: make(chan string, 1024), done: make(chan error, 1)}
	c.cmd.Env = append(childEnv(), "NODE_PATH="+mods)
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = os.Stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.done <- c.cmd.Wait()
	}()
	t.Cleanup(func() { _ = c.cmd.Process.Kill() })
	return c
}

// until reads the client's lines until one starts with prefix and
// passes ok, and returns its value; it fails the test if the client
// ends first or two minutes pass.
func (c *tusClient) until(t *testing.T, prefix string, ok func(string) bool) string {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, open := <-c.lines:
			if !open {
				t.Fatalf("tus-js-client ended before %q", prefix)
			}
			if v, found := strings.CutPrefix(line, prefix+" "); found && ok(v) {
				return v
			}
			if strings.HasPrefix(line, "error ") && prefix != "error" {
				t.Fatalf("tus-js-client: %s", line)
			}
		case <-timeout:
			t.Fatalf("tus-js-client: no %q within 2 minutes", prefix)
		}
	}
}

func anyLine(string) bool { return true }

// untilDone reads the client's lines until "done" and returns the image
// identifier with the offsets of the resumes (HEAD answers) seen on the
// way.
func (c *tusClient) untilDone(t *testing.T) (string, []int) {
	t.Helper()
	var offsets []int
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, open := <-c.lines:
			if !open {
				t.Fatal("tus-js-client ended before done")
			}
			if o, ok := strings.CutPrefix(line, "resumed "); ok {
				n, _ := strconv.Atoi(o)
				offsets = append(offsets, n)
			}
			if id, ok := strings.CutPrefix(line, "done "); ok {
				return id, offsets
			}
			if strings.HasPrefix(line, "error ") {
				t.Fatalf("tus-js-client: %s", line)
			}
		case <-timeout:
			t.Fatal("tus-js-client: not done within 2 minutes")
		}
	}
}

// kill ends the server with SIGKILL: nothing is flushed or closed.
func (s *server) kill() {
	if s.stopped {
		return
	}
	s.stopped = true
	_ = s.cmd.Process.Kill()
	<-s.done
}

// bigPNG writes a PNG of 60 MB (opaque noise, stored uncompressed: 3 bytes a pixel) and
// returns its path and bytes.
func bigPNG(t *testing.T) (string, []byte) { return noiseFile(t, 4000, 5000) }

// atHalf waits until the client has sent about half of size bytes.
func atHalf(t *testing.T, c *tusClient, size int) {
	t.Helper()
	c.until(t, "progress", func(v string) bool { n, _ := strconv.Atoi(v); return n >= size/2 })
}

// throttled returns the address of a reverse proxy on loopback to target
// that passes request bodies on at about rate bytes a second: so that a
// test kills the server while an upload is under way, however fast the
// machine sends it.
func throttled(t *testing.T, target string, rate int) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = slowBody{r.Body, rate}
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// slowBody reads at most 64 KiB at a time, each read followed by the time
// it takes at rate bytes a second.
type slowBody struct {
	io.ReadCloser
	rate int
}

func (b slowBody) Read(p []byte) (int, error) {
	p = p[:min(len(p), 64<<10)]
	n, err := b.ReadCloser.Read(p)
	time.Sleep(time.Duration(n) * time.Second / time.Duration(b.rate))
	return n, err
}

// checkSameAsPost checks that id names the file's bytes as a plain POST
// of them does, and that the server stores exactly those bytes.
func checkSameAsPost(t *testing.T, s *server, id string, data []byte) {
	t.Helper()
	if id != md5Hex(data) {
		t.Fatalf("tus upload named %q, want the MD5 of the file %s", id, md5Hex(data))
	}
	r := s.write(t, http.MethodPost, "/users/alice/images", data, backendKey)
	wantStatus(t, "POST of the same file", r, http.StatusOK) // the user has it already
	var posted struct{ ImageIdentifier string }
	r.JSON(t, &posted)
	if posted.ImageIdentifier != id {
		t.Fatalf("POST named %q, tus %q", posted.ImageIdentifier, id)
	}
	r = s.get(t, "/users/alice/images/"+id, backendKey)
	wantStatus(t, "GET the original", r, http.StatusOK)
	if !bytes.Equal(r.Body, data) {
		t.Fatalf("stored bytes (%d) differ from the file (%d)", len(r.Body), len(data))
	}
}

// partsUnder lists the resumable upload parts (files under a part/ folder) under dir.
func partsUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(filepath.ToSlash(p), "/part/") {
			files = append(files, p)
		}
		return nil
	})
	return files
}

// killAndRestart SIGKILLs s and starts it again on the same address,
// with cfg and the same data folder, as a supervisor would.
func killAndRestart(t *testing.T, s *server, cfg, data string) *server {
	t.Helper()
	s.kill()
	s2, err := tryStartAt(t, cfg, data, strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return s2
}

// checkClean stops s, then checks that fsck finds nothing in its data and
// that the staging folder holds no file.
func checkClean(t *testing.T, s *server, staging string) {
	t.Helper()
	s.Stop()
	if out, errOut, err := runCLI(t, nil, "fsck", "--config", s.Config, "--data", s.DataDir, "--grace", "0s"); err != nil {
		t.Fatalf("fsck: %v\n%s\n%s", err, out, errOut)
	}
	// The finished upload's info stays (it names the image for
	// uploads.finishedTTL); its parts are gone.
	if files := partsUnder(t, staging); len(files) != 0 {
		t.Fatalf("the staging folder still holds %v", files)
	}
}

// tusKillConfig is the configuration of the kill tests: upload tokens,
// resumable uploads staged in staging in parts of 1 MB (a kill loses at
// most one), and bodies up to 100 MB.
func tusKillConfig(staging string) string {
	return tokenKeysConfig + fmt.Sprintf(`  stagingDir: %q
  partSize: 1048576
limits:
  maxBodyBytes: 104857600
`, staging)
}

// TestTusResumeAfterKill: tus-js-client uploads a 60 MB PNG with a token;
// the server is killed (SIGKILL) at about half and restarted on the same
// address; the client resumes from what the staging folder kept and
// finishes. The image is the one a POST of the file names, with the same
// bytes; fsck finds nothing and the staging folder is empty.
func TestTusResumeAfterKill(t *testing.T) {
	staging := t.TempDir()
	cfg := tusKillConfig(staging)
	data := t.TempDir()
	s := startServerData(t, cfg, data)
	file, img := bigPNG(t)
	tok := s.issueToken(t, map[string]any{"maxBytes": 100 << 20})

	c := startTusClient(t, file, throttled(t, s.URL, 20<<20)+"/users/alice/uploads", tok.Token, "", true)
	atHalf(t, c, len(img))
	s2 := killAndRestart(t, s, cfg, data)
	resumed := c.until(t, "resumed", func(v string) bool { n, _ := strconv.Atoi(v); return n > 0 })
	id := c.until(t, "done", anyLine)
	t.Logf("resumed from %s of %d bytes", resumed, len(img))
	checkSameAsPost(t, s2, id, img)
	checkClean(t, s2, staging)
}

// TestTusResumeOnAnotherInstance: two instances share PostgreSQL and S3
// (versitygw); tus-js-client starts a 60 MB upload on A, A is killed at
// about half, and the client resumes the same upload on B, which finishes
// it from the parts A committed to the bucket, through a stall of S3
// (SIGSTOP, 8 s) at three quarters that sends nothing again.
func TestTusResumeOnAnotherInstance(t *testing.T) {
	dsn := postgresDSN(t)
	gw := startVersitygw(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "scale")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "scalesecret")
	cfg := fmt.Sprintf("database: %q\nstorage: %q\n", dsn, gw.url()) + tokenKeysConfig + `  partSize: 1048576
limits:
  maxBodyBytes: 104857600
`
	a := startServer(t, cfg)
	b := startServer(t, cfg)
	file, img := bigPNG(t)
	tok := a.issueToken(t, map[string]any{"maxBytes": 100 << 20})

	viaA := throttled(t, a.URL, 20<<20)
	c := startTusClient(t, file, viaA+"/users/alice/uploads", tok.Token, "", false)
	uploadURL := c.until(t, "url", anyLine)
	atHalf(t, c, len(img))
	a.kill()
	onB := strings.Replace(uploadURL, viaA, b.URL, 1)
	c2 := startTusClient(t, file, "", tok.Token, onB, true)
	resumed := c2.until(t, "resumed", anyLine)
	if n, _ := strconv.Atoi(resumed); n <= 0 {
		t.Fatalf("B resumed from offset %s: nothing A committed was kept", resumed)
	}
	// S3 stalls once (frozen 8 s) while B takes the rest: B answers 503,
	// the client retries, and every resume starts at or after the last.
	c2.until(t, "progress", func(v string) bool { n, _ := strconv.Atoi(v); return n >= len(img)*3/4 })
	gw.signal(t, syscall.SIGSTOP)
	time.Sleep(8 * time.Second)
	gw.signal(t, syscall.SIGCONT)
	id, offsets := c2.untilDone(t)
	last, _ := strconv.Atoi(resumed)
	for _, o := range offsets {
		if o < last {
			t.Fatalf("after the stall the client resumed from %d, before %d: bytes the server had were sent again (resumes %v)", o, last, offsets)
		}
		last = o
	}
	if len(offsets) == 0 {
		t.Fatalf("the client never resumed after the stall of S3")
	}
	t.Logf("B resumed from %s of %d bytes, then after the stall from %v", resumed, len(img), offsets)
	checkSameAsPost(t, b, id, img)
	b.Stop()
	if out, errOut, err := runCLI(t, map[string]string{"AWS_ACCESS_KEY_ID": "scale", "AWS_SECRET_ACCESS_KEY": "scalesecret"},
		"fsck", "--config", b.Config, "--data", b.DataDir, "--grace", "0s"); err != nil {
		t.Fatalf("fsck: %v\n%s\n%s", err, out, errOut)
	}
	if files := partsUnder(t, filepath.Join(gw.root, gw.bucket, "uploads")); len(files) != 0 {
		t.Fatalf("the bucket still holds %v", files)
	}
}
