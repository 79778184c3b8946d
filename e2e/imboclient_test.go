package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// imboclientVersion is what npm installs: the 3.x line of Imbo's official
// JavaScript client (3.2.0 is the newest 3.x).
const imboclientVersion = "imboclient@3"

// TestImboClient runs the official Imbo JavaScript client against vitrine
// (testdata/imboclient.js): add an image, read its properties, replace and
// merge metadata, fetch thumbnail URLs it builds, list, short URL, delete.
// Once with a key named like the user and once with a different key, which
// the client puts into the query as publicKey.
func TestImboClient(t *testing.T) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the Imbo JavaScript client test needs Node.js and npm", tool)
		}
	}
	script, err := filepath.Abs(filepath.Join("testdata", "imboclient.js"))
	if err != nil {
		t.Fatal(err)
	}
	modules := installImboClient(t)

	s := startServer(t, `headerPrefix: X-Imbo
accessControl:
  keys:
    - publicKey: alice
      privateKey: alice-private
      rules:
        - users: [alice]
          group: read-write
    - publicKey: frontend
      privateKey: frontend-private
      rules:
        - users: [alice]
          group: read-write
`)
	for i, k := range []key{
		{Public: "alice", Private: "alice-private"},
		{Public: "frontend", Private: "frontend-private"},
	} {
		t.Run("key "+k.Public, func(t *testing.T) {
			// Each run has its own image, so a failed run leaves nothing for the next.
			const w, h = 120, 90
			img := filepath.Join(t.TempDir(), "image.png")
			if err := os.WriteFile(img, testPNG(t, w, h, byte(100+i)), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", script)
			cmd.Env = append(os.Environ(),
				"NODE_PATH="+modules,
				"IMBO_HOST="+s.URL,
				"IMBO_USER=alice",
				"IMBO_PUBLIC_KEY="+k.Public,
				"IMBO_PRIVATE_KEY="+k.Private,
				"IMBO_IMAGE="+img,
				"IMBO_WIDTH="+strconv.Itoa(w),
				"IMBO_HEIGHT="+strconv.Itoa(h),
			)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			t.Logf("node %s:\n%s", filepath.Base(script), out.String())
			if err != nil {
				t.Fatalf("the Imbo client script failed (%v): %s", err, lastLine(out.String()))
			}
			if !strings.HasSuffix(strings.TrimSpace(out.String()), "PASS") {
				t.Fatalf("the Imbo client script did not finish with PASS")
			}
		})
	}
}

// installImboClient installs the npm package into a temporary directory and
// returns its node_modules directory (never inside the repository).
func installImboClient(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"vitrine-e2e-imboclient","private":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error", imboclientVersion)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm install %s: %v\n%s", imboclientVersion, err, out)
	}
	v, err := exec.Command("node", "-e", `console.log(require(process.argv[1]).version)`,
		filepath.Join(dir, "node_modules", "imboclient", "package.json")).Output()
	if err != nil {
		t.Fatalf("reading the installed imboclient version: %v", err)
	}
	if ver := strings.TrimSpace(string(v)); !strings.HasPrefix(ver, "3.") {
		t.Fatalf("npm installed imboclient %s, want 3.x", ver)
	} else {
		t.Logf("imboclient %s", ver)
	}
	return filepath.Join(dir, "node_modules")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
