package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/png" // the tint's out.png
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSDKTutorials follows the tutorials of wasm-sdk/README.md literally,
// one per language, so that the page and what works cannot drift apart:
// the fenced blocks tagged for a language ("tutorial" for Go, "c-tutorial",
// "as-tutorial", "rust-tutorial") become one shell script, run in an empty
// home folder (the tutorial's ~/filters) with $VITRINE a checkout made of
// wasm-sdk and the binary under test. Each tutorial builds the same two
// filters: tint, a transformation it runs with `vitrine filter test`, and
// minside, a listener that reads its settings and the upload's ImageInfo
// and writes metadata. Then a server loads that ~/filters and both are used
// over HTTP.
//
// Nothing comes from the network: Go runs with GOPROXY=off, npm offline
// from the cache make test-deps filled. A language whose toolchain is
// missing is skipped, naming what to install, unless
// VITRINE_TEST_ALL_GUESTS=1 (as make test sets it).
func TestSDKTutorials(t *testing.T) {
	readme, err := os.ReadFile("../wasm-sdk/README.md")
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := filepath.Abs("../wasm-sdk")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lang, tag string
		missing   func() string
	}{
		{"Go", "tutorial", func() string { return "" }},
		{"C", "c-tutorial", missingClang},
		{"AssemblyScript", "as-tutorial", missingAsc},
		{"Rust", "rust-tutorial", missingRustWASI},
	} {
		t.Run(c.lang, func(t *testing.T) {
			if why := c.missing(); why != "" {
				if os.Getenv("VITRINE_TEST_ALL_GUESTS") == "1" {
					t.Fatalf("VITRINE_TEST_ALL_GUESTS=1 and the %s tutorial needs %s", c.lang, why)
				}
				t.Skipf("the %s tutorial needs %s", c.lang, why)
			}
			script, err := tutorialScript(string(readme), c.tag)
			if err != nil {
				t.Fatal(err)
			}
			home := runTutorial(t, sdk, script)
			t.Run("filter test", func(t *testing.T) {
				out, err := os.ReadFile(filepath.Join(home, "filters", "tint", "out.png"))
				if err != nil {
					t.Fatalf("the tutorial's vitrine filter test left no out.png: %v", err)
				}
				checkTinted(t, "out.png", out)
			})
			t.Run("server", func(t *testing.T) { useTutorialFilters(t, filepath.Join(home, "filters"), sdk) })
		})
	}
}

// tutorialBlock is the first line of a fenced block of a tutorial:
// language, tag and, for a file, its name.
var tutorialBlock = regexp.MustCompile("^```([a-z]+) ([a-z-]+)(?: +(\\S+))? *$")

// tutorialScript turns the blocks tagged tag into a shell script in the
// order of the page: a block naming no file ("```sh tutorial") runs as it
// stands, one naming a file ("```go tutorial main.go") is written to it in
// the current folder.
func tutorialScript(readme, tag string) (string, error) {
	var script strings.Builder
	in, file, blocks := false, "", 0
	for line := range strings.Lines(readme) {
		line = strings.TrimRight(line, "\n")
		switch m := tutorialBlock.FindStringSubmatch(line); {
		case in && strings.TrimSpace(line) == "```":
			if file != "" {
				script.WriteString("TUTORIAL_EOF\n")
			}
			in = false
		case in:
			script.WriteString(line + "\n")
		case m != nil && m[2] == tag:
			in, file = true, m[3]
			blocks++
			if file != "" {
				fmt.Fprintf(&script, "cat > %s <<'TUTORIAL_EOF'\n", file)
			}
		}
	}
	if in {
		return "", fmt.Errorf("wasm-sdk/README.md: a block tagged %s is not closed", tag)
	}
	if blocks == 0 || !strings.Contains(script.String(), "filter test") {
		return "", fmt.Errorf("wasm-sdk/README.md: no blocks tagged %s with a vitrine filter test", tag)
	}
	return script.String(), nil
}

// runTutorial runs script in a new home folder and returns that folder.
func runTutorial(t *testing.T, sdk, script string) string {
	t.Helper()
	tmp := t.TempDir()
	home, checkout := filepath.Join(tmp, "home"), filepath.Join(tmp, "vitrine")
	for _, d := range []string{home, checkout} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := filepath.Abs(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sdk, filepath.Join(checkout, "wasm-sdk")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(checkout, "vitrine")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tmp, "tutorial.sh")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euxo", "pipefail", path)
	cmd.Dir = home
	cmd.Env = tutorialEnv(t, home, checkout)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the tutorial's commands failed: %v\n%s", err, out)
	}
	return home
}

// tutorialEnv is the environment of a reader who followed Prerequisites:
// HOME the new folder and VITRINE the checkout, with the Go build cache
// and npm's cache where they are (a fresh Go cache would rebuild the
// standard library for wasip1) and neither allowed the network.
func tutorialEnv(t *testing.T, home, checkout string) []string {
	t.Helper()
	env := []string{"HOME=" + home, "VITRINE=" + checkout, "GOPROXY=off", "GOFLAGS=",
		"npm_config_offline=true", "npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false"}
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		env = append(env, v+"="+strings.TrimSpace(string(out)))
	}
	cache := os.Getenv("npm_config_cache")
	if cache == "" {
		h, _ := os.UserHomeDir()
		cache = filepath.Join(h, ".npm")
	}
	env = append(env, "npm_config_cache="+cache)
	for _, kv := range childEnv() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "GO") && !strings.HasPrefix(name, "npm_config_") && name != "HOME" && name != "VITRINE" {
			env = append(env, kv)
		}
	}
	return env
}

// useTutorialFilters serves the filters folder the tutorial made and uses
// both filters as a client would: tint in a chain, minside on uploads, a
// small one refused by its settings' minSide (200, where the code's default
// is 100) and the portrait let through with its tag.
func useTutorialFilters(t *testing.T, dir, sdk string) {
	s := startServer(t, fmt.Sprintf("filters:\n  dir: %s\n", dir))
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	for _, name := range []string{"tint", "minside"} {
		if f := waitLoaded(t, s, admin, name); !f.Loaded {
			t.Fatalf("the server did not load the tutorial's %s: %+v", name, f)
		}
	}
	small := testPNG(t, 160, 120, 1)
	s.checkError(t, "a 160x120 upload", s.write(t, http.MethodPost, "/users/alice/images", small, admin),
		http.StatusBadRequest, "The image's shorter side is 120 pixels; uploads need at least 200")
	portrait, err := os.ReadFile(filepath.Join(sdk, "examples", "faces", "testdata", "sample.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	r := s.write(t, http.MethodPost, "/users/alice/images", portrait, admin)
	wantStatus(t, "the portrait's upload", r, http.StatusCreated)
	var up struct{ ImageIdentifier string }
	r.JSON(t, &up)
	r = s.get(t, "/users/alice/images/"+up.ImageIdentifier+"/metadata", admin)
	wantStatus(t, "the portrait's metadata", r, http.StatusOK)
	var md struct {
		Minside *struct {
			ShorterSide int    `json:"shorterSide"`
			Mime        string `json:"mime"`
			Bytes       int    `json:"bytes"`
		} `json:"minside"`
	}
	r.JSON(t, &md)
	if m := md.Minside; m == nil || m.ShorterSide != 320 || m.Mime != "image/jpeg" || m.Bytes != len(portrait) {
		t.Errorf("the portrait's metadata %s, want minside: shorterSide 320, mime image/jpeg, bytes %d", r.Body, len(portrait))
	}
	r = s.get(t, "/users/alice/images/"+up.ImageIdentifier+".png?t[]=tint:color=ff8000,amount=0.8", admin)
	wantStatus(t, "the portrait through tint", r, http.StatusOK)
	checkTinted(t, "the portrait through tint", r.Body)
}

// checkTinted fails unless the PNG b is tinted towards ff8000: on average
// clearly more red than green, and more green than blue.
func checkTinted(t *testing.T, what string, b []byte) {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var r, g, bl float64
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			r, g, bl = r+float64(cr), g+float64(cg), bl+float64(cb)
		}
	}
	n := float64(bounds.Dx()*bounds.Dy()) * 257
	r, g, bl = r/n, g/n, bl/n
	if r < 1.3*g || g < 1.3*bl {
		t.Errorf("%s: %dx%d, mean colour %.0f,%.0f,%.0f is not tinted orange", what, bounds.Dx(), bounds.Dy(), r, g, bl)
	}
}

// missingClang names what the C tutorial's clang command needs and this
// machine lacks, "" when nothing.
func missingClang() string {
	cmd := exec.Command("clang", "--target=wasm32-wasi", "-x", "c", "-", "-o", os.DevNull)
	cmd.Stdin = strings.NewReader("int main(void){return 0;}")
	if err := cmd.Run(); err != nil {
		return "clang for wasm32-wasi (apt-get install clang lld wasi-libc libclang-rt-dev-wasm32)"
	}
	return ""
}

// missingAsc: the AssemblyScript tutorial installs assemblyscript offline,
// from the npm cache that make test-deps filled when it installed the
// compiler (VITRINE_TEST_ASC, else under ~/.cache/vitrine-test-tools).
func missingAsc() string {
	if _, err := exec.LookPath("npm"); err != nil {
		return "npm (apt-get install npm)"
	}
	asc := os.Getenv("VITRINE_TEST_ASC")
	if asc == "" {
		h, _ := os.UserHomeDir()
		asc = filepath.Join(h, ".cache", "vitrine-test-tools", "assemblyscript-0.28.20", "node_modules", ".bin", "asc")
	}
	if _, err := os.Stat(asc); err != nil {
		return "assemblyscript 0.28.20 in the npm cache (make test-deps installs it)"
	}
	return ""
}

// missingRustWASI: the Rust tutorial calls Debian's /usr/bin/rustc.
func missingRustWASI() string {
	if _, err := os.Stat("/usr/lib/rustlib/wasm32-wasi"); err != nil {
		return "Debian's rustc for wasm32-wasi (apt-get install rustc libstd-rust-dev-wasm32)"
	}
	return ""
}
