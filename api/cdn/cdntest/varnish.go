package cdntest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// VCLBackendPort is the line of the VCL (api/cdn/testdata/vitrine.vcl, the
// one api/cdn/README.md shows) that StartVarnish rewrites to point Varnish at the
// test's origin.
const VCLBackendPort = `.port = "8080";`

// findVarnish returns the paths of varnishd and varnishadm, or skips the
// test naming what is missing.
func findVarnish(t testing.TB) (varnishd, varnishadm string) {
	t.Helper()
	find := func(name string) string {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
			if p := filepath.Join(dir, name); isExecutable(p) {
				return p
			}
		}
		return ""
	}
	varnishd, varnishadm = find("varnishd"), find("varnishadm")
	if varnishd == "" || varnishadm == "" {
		t.Skip("varnishd or varnishadm not found: install Debian's varnish and varnish-modules " +
			"(apt-get install varnish varnish-modules; make test-deps does)")
	}
	return varnishd, varnishadm
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// StartVarnish runs varnishd in the foreground with the VCL at vclFile
// pointed at origin (host:port), on a port of its choosing, and returns its address; the test's
// cleanup stops it.
func StartVarnish(t testing.TB, vclFile, origin string) string {
	t.Helper()
	varnishd, varnishadm := findVarnish(t)
	_, port, err := net.SplitHostPort(origin)
	if err != nil {
		t.Fatal(err)
	}
	vcl, err := os.ReadFile(vclFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(vcl, []byte(VCLBackendPort)) {
		t.Fatalf("%s has no line %s for the test to rewrite", vclFile, VCLBackendPort)
	}
	dir := t.TempDir()
	vclPath := filepath.Join(dir, "vitrine.vcl")
	vcl = bytes.Replace(vcl, []byte(VCLBackendPort), []byte(`.port = "`+port+`";`), 1)
	if err := os.WriteFile(vclPath, vcl, 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")

	// Compile first, so that a missing xkey vmod is a skip naming it
	// rather than a failed start.
	if out, err := exec.Command(varnishd, "-C", "-j", "none", "-n", work+"-compile", "-f", vclPath).CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("Could not find VMOD xkey")) {
			t.Skip("the xkey vmod is not installed: install Debian's varnish-modules (make test-deps does)")
		}
		t.Fatalf("varnishd -C: %v\n%s", err, out)
	}

	// -j none: no privilege separation, so that the test runs as whoever
	// runs it, root included (the default jail would switch to the
	// varnish user, who cannot read the test's temporary directory).
	// -a 127.0.0.1:0 lets Varnish choose a free port, read back through
	// varnishadm. The rest keeps it small: one thread pool, little
	// memory, a small log.
	cmd := exec.Command(varnishd, "-F", "-j", "none", "-n", work, "-a", "127.0.0.1:0", "-T", "127.0.0.1:0",
		"-f", vclPath, "-s", "malloc,16m", "-l", "2m",
		"-p", "thread_pools=1", "-p", "thread_pool_min=5", "-p", "thread_pool_max=50")
	out, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, scanned := make(chan error, 1), make(chan struct{})
	go func() { exited <- cmd.Wait(); w.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil && !isSignal(err) {
			t.Logf("varnishd: %v", err)
		}
		<-scanned
	})

	// Wait for the child to be up, as varnishd reports it; every line
	// goes to the test's log.
	launched := make(chan bool, 1)
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		up := false
		for sc.Scan() {
			t.Log("varnishd: " + sc.Text())
			if !up && strings.Contains(sc.Text(), "Child launched OK") {
				up = true
				launched <- true
			}
		}
		_, _ = io.Copy(io.Discard, out)
		if !up {
			launched <- false
		}
	}()
	select {
	case ok := <-launched:
		if !ok {
			t.Fatal("varnishd stopped before its child started (its output is above)")
		}
	case <-time.After(time.Minute):
		// Not a timing assertion: a guard against a varnishd that hangs.
		t.Fatal("varnishd did not start its child within a minute")
	}
	addrs, err := exec.Command(varnishadm, "-n", work, "debug.listen_address").CombinedOutput()
	if err != nil {
		t.Fatalf("varnishadm debug.listen_address: %v\n%s", err, addrs)
	}
	// One line per listen address: "a0 127.0.0.1 41234".
	f := strings.Fields(string(addrs))
	if len(f) < 3 {
		t.Fatalf("varnishadm debug.listen_address: %q", addrs)
	}
	return net.JoinHostPort(f[1], f[2])
}

func isSignal(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && !ee.Exited()
}
