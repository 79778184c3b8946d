package filters

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The SDK conformance kit: the same three example filters written in every
// language with an SDK (Go, C, AssemblyScript, Rust; wasm-sdk/README.md,
// "One filter in every language") are built from their source here and run
// by this host through the same cases. Pixels are compared byte for byte to
// a reference computed in Go; the listener's metadata, rejection, counters,
// stats_set value and log lines must be the same in every language, and so
// must how each SDK fails.
//
// A language whose toolchain is missing is skipped, naming what to install,
// unless VITRINE_TEST_ALL_GUESTS=1 (as make test sets it): then it fails, so
// that CI cannot pass without running every language.

// sdkLang is one language of the kit: how to build its example of a role
// (invert, duotone, minsize) and where its manifest is.
type sdkLang struct {
	name string
	// folder is the example folder of role, relative to the repository.
	folder func(role string) string
	// toolchain reports why the language cannot be built here, "" when it
	// can.
	toolchain func() string
	// build compiles the example of role into out.
	build func(role, out string) error
}

const ascVersion = "0.28.20" // the Makefile's ASC_VERSION

// ascPath is the AssemblyScript compiler: VITRINE_TEST_ASC, else where make
// test-deps installs it.
func ascPath() string {
	if p := os.Getenv("VITRINE_TEST_ASC"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "vitrine-test-tools", "assemblyscript-"+ascVersion, "node_modules", ".bin", "asc")
}

// rustcPath is Debian's rustc (the one first on PATH may be a rustup
// toolchain without the wasm32-wasi standard library): VITRINE_TEST_RUSTC,
// else /usr/bin/rustc.
func rustcPath() string {
	if p := os.Getenv("VITRINE_TEST_RUSTC"); p != "" {
		return p
	}
	return "/usr/bin/rustc"
}

func run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
	return nil
}

// rustSDK builds the Rust SDK's rlib once.
var rustSDK struct {
	once sync.Once
	path string
	err  error
}

var sdkLangs = []sdkLang{
	{
		name:      "go",
		folder:    func(role string) string { return "wasm-sdk/examples/" + role },
		toolchain: func() string { return "" },
		build: func(role, out string) error {
			cmd := exec.Command("go", "build", "-trimpath", "-buildmode=c-shared", "-o", out, "./examples/"+role)
			cmd.Dir = filepath.Join("..", "wasm-sdk")
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %s", err, b)
			}
			return nil
		},
	},
	{
		name:   "c",
		folder: func(role string) string { return "wasm-sdk/examples/" + role + "-c" },
		toolchain: func() string {
			dir, err := os.MkdirTemp("", "vitrine-clang-")
			if err != nil {
				return err.Error()
			}
			defer os.RemoveAll(dir)
			src := filepath.Join(dir, "probe.c")
			_ = os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644)
			if run(dir, "clang", "--target=wasm32-wasi", "-o", filepath.Join(dir, "probe.wasm"), src) != nil {
				return "clang cannot build for wasm32-wasi: install clang, lld, wasi-libc and libclang-rt-dev-wasm32 (make test-deps)"
			}
			return ""
		},
		build: func(role, out string) error {
			return run(filepath.Join("..", "wasm-sdk"), "clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-O2",
				"-Wall", "-Wextra", "-Werror", "-Iinclude", "-o", out, "examples/"+role+"-c/main.c")
		},
	},
	{
		name:   "assemblyscript",
		folder: func(role string) string { return "wasm-sdk/assemblyscript/examples/" + role },
		toolchain: func() string {
			if _, err := os.Stat(ascPath()); err != nil {
				return fmt.Sprintf("no AssemblyScript compiler at %s: run make test-deps (assemblyscript@%s from npm) or set VITRINE_TEST_ASC", ascPath(), ascVersion)
			}
			return ""
		},
		build: func(role, out string) error {
			return run(filepath.Join("..", "wasm-sdk", "assemblyscript"), ascPath(), "examples/"+role+"/index.ts",
				"--config", "asconfig.json", "--target", "release", "--outFile", out)
		},
	},
	{
		name:   "rust",
		folder: func(role string) string { return "wasm-sdk/rust/examples/" + role },
		toolchain: func() string {
			out, err := exec.Command(rustcPath(), "--print", "sysroot").Output()
			if err != nil {
				return fmt.Sprintf("no rustc at %s: apt-get install rustc libstd-rust-dev-wasm32 (make test-deps) or set VITRINE_TEST_RUSTC", rustcPath())
			}
			if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), "lib", "rustlib", "wasm32-wasi")); err != nil {
				return fmt.Sprintf("%s has no wasm32-wasi standard library: apt-get install libstd-rust-dev-wasm32 (make test-deps)", rustcPath())
			}
			return ""
		},
		build: func(role, out string) error {
			sdk := filepath.Join("..", "wasm-sdk", "rust")
			rustSDK.once.Do(func() {
				rustSDK.path = filepath.Join(filepath.Dir(out), "libvitrine.rlib")
				rustSDK.err = run(sdk, rustcPath(), "--edition", "2021", "--crate-type", "rlib", "--crate-name", "vitrine",
					"--target", "wasm32-wasi", "-O", "-o", rustSDK.path, "src/lib.rs")
			})
			if rustSDK.err != nil {
				return rustSDK.err
			}
			return run(sdk, rustcPath(), "--edition", "2021", "--crate-type", "cdylib", "--target", "wasm32-wasi", "-O",
				"-C", "strip=symbols", "--extern", "vitrine="+rustSDK.path, "-o", out, "examples/"+role+"/src/lib.rs")
		},
	},
}

// sdkBuilt holds each built example, by "lang/role".
var sdkBuilt sync.Map

// sdkExample builds the example of role in lang once and returns its
// module's path and its manifest.
func sdkExample(t testing.TB, lang sdkLang, role string) (wasm string, manifest map[string]any) {
	t.Helper()
	v, _ := sdkBuilt.LoadOrStore(lang.name+"/"+role, &guestBuild{})
	b := v.(*guestBuild)
	b.once.Do(func() {
		examples.mu.Lock()
		if examples.root == "" {
			examples.root, b.err = os.MkdirTemp("", "vitrine-examples-")
		}
		root := examples.root
		examples.mu.Unlock()
		if b.err != nil {
			return
		}
		dir := filepath.Join(root, "sdk-"+lang.name)
		if b.err = os.MkdirAll(dir, 0o755); b.err != nil {
			return
		}
		b.path = filepath.Join(dir, role+".wasm")
		b.err = lang.build(role, b.path)
	})
	if b.err != nil {
		t.Fatalf("build the %s example %s: %v", lang.name, role, b.err)
	}
	data, err := os.ReadFile(filepath.Join("..", lang.folder(role), "filter.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatalf("%s/filter.json: %v", lang.folder(role), err)
	}
	return b.path, manifest
}

// loadSDKExample loads the example of role in lang, its manifest changed by
// mod (when not nil), into a host of its own logging as JSON to logs.
func loadSDKExample(t testing.TB, lang sdkLang, role string, logs *lockedBuffer, mod func(map[string]any)) (*Set, string) {
	t.Helper()
	wasm, m := sdkExample(t, lang, role)
	if mod != nil {
		mod(m)
	}
	name, _ := m["name"].(string)
	dir := t.TempDir()
	writeFilter(t, dir, name, wasm, m)
	set := newHost(t, dir, func(c *Config) {
		if logs != nil {
			c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}).Current()
	for _, st := range set.Status() {
		if !st.Loaded {
			t.Fatalf("%s not loaded: %+v", name, st)
		}
	}
	return set, name
}

func TestSDKConformance(t *testing.T) {
	all := os.Getenv("VITRINE_TEST_ALL_GUESTS") == "1"
	for _, lang := range sdkLangs {
		t.Run(lang.name, func(t *testing.T) {
			t.Parallel()
			if why := lang.toolchain(); why != "" {
				if all {
					t.Fatalf("VITRINE_TEST_ALL_GUESTS=1 and %s", why)
				}
				t.Skip(why)
			}
			t.Run("invert", func(t *testing.T) { conformInvert(t, lang) })
			t.Run("duotone", func(t *testing.T) { conformDuotone(t, lang) })
			t.Run("minsize", func(t *testing.T) { conformMinsize(t, lang) })
			t.Run("settings error", func(t *testing.T) { conformSettingsError(t, lang) })
			t.Run("out of memory", func(t *testing.T) { conformOutOfMemory(t, lang) })
		})
	}
}

// TestSDKManifests checks that every language's example of a role has the
// same manifest as the Go one's, but for its name, description and (C's
// minsize, which shares a folder with Go's) priority: the kit compares
// like with like.
func TestSDKManifests(t *testing.T) {
	for _, role := range []string{"invert", "duotone", "minsize"} {
		var want string
		for _, lang := range sdkLangs {
			data, err := os.ReadFile(filepath.Join("..", lang.folder(role), "filter.json"))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatalf("%s/filter.json: %v", lang.folder(role), err)
			}
			if m["name"] != filepath.Base(lang.folder(role)) {
				t.Errorf("%s/filter.json names %v", lang.folder(role), m["name"])
			}
			delete(m, "name")
			delete(m, "description")
			delete(m, "priority")
			got, _ := json.Marshal(m)
			if want == "" {
				want = string(got)
			} else if string(got) != want {
				t.Errorf("%s/filter.json:\n%s\nwant, as the Go example's:\n%s", lang.folder(role), got, want)
			}
		}
	}
}

// kitImage is the kit's input: random colours and alpha, an odd size so
// that loops working on several pixels at once meet a remainder.
func kitImage() *image.NRGBA { return testImage(61, 37, 7) }

// transformBytes runs tr on in with raw parameters, checked and normalised
// by the host as a request's are.
func transformBytes(t *testing.T, tr Transformation, in *image.NRGBA, raw map[string]string) *image.NRGBA {
	t.Helper()
	params, err := tr.CheckParams(raw)
	if err != nil {
		t.Fatalf("parameters %v: %v", raw, err)
	}
	out, err := tr.Transform(context.Background(), in, params, nil)
	if err != nil {
		t.Fatalf("parameters %v: %v", raw, err)
	}
	return out
}

// samePixels fails unless got is want, naming the first pixel that differs.
func samePixels(t *testing.T, what string, got, want *image.NRGBA) {
	t.Helper()
	if got.Rect.Size() != want.Rect.Size() {
		t.Fatalf("%s: output is %v, want %v", what, got.Rect.Size(), want.Rect.Size())
	}
	for i := 0; i < len(want.Pix); i += 4 {
		if string(got.Pix[i:i+4]) != string(want.Pix[i:i+4]) {
			x, y := i/4%want.Rect.Dx(), i/4/want.Rect.Dx()
			t.Fatalf("%s: pixel (%d,%d) is %v, want %v", what, x, y, got.Pix[i:i+4], want.Pix[i:i+4])
		}
	}
}

// refInvert is the reference of every invert example.
func refInvert(in *image.NRGBA, alpha bool) *image.NRGBA {
	out := image.NewNRGBA(in.Rect)
	copy(out.Pix, in.Pix)
	for i := 0; i < len(out.Pix); i += 4 {
		out.Pix[i], out.Pix[i+1], out.Pix[i+2] = 255-out.Pix[i], 255-out.Pix[i+1], 255-out.Pix[i+2]
		if alpha {
			out.Pix[i+3] = 255 - out.Pix[i+3]
		}
	}
	return out
}

func conformInvert(t *testing.T, lang sdkLang) {
	set, name := loadSDKExample(t, lang, "invert", nil, nil)
	tr, _ := set.Transformation(name)
	in := kitImage()
	for _, c := range []struct {
		raw   map[string]string
		alpha bool
	}{
		{map[string]string{}, false},
		{map[string]string{"alpha": "true"}, true},
		{map[string]string{"alpha": "1"}, true},
		{map[string]string{"alpha": "0"}, false},
	} {
		samePixels(t, fmt.Sprintf("%s %v", name, c.raw), transformBytes(t, tr, in, c.raw), refInvert(in, c.alpha))
	}
	// A parameter the schema does not know never reaches the guest.
	if _, err := tr.CheckParams(map[string]string{"alpha": "maybe"}); !isKind(err, KindInvalid) {
		t.Errorf("alpha=maybe: %v, want a parameter error", err)
	}
}

// refDuotone is the reference of every duotone example: the arithmetic of
// wasm-sdk/examples/duotone, written plainly.
func refDuotone(in *image.NRGBA, dark, light [3]int, mix float64) *image.NRGBA {
	out := image.NewNRGBA(in.Rect)
	copy(out.Pix, in.Pix)
	m := int(min(max(mix, 0), 1)*256 + 0.5)
	for i := 0; i < len(out.Pix); i += 4 {
		p := out.Pix[i : i+4]
		l := (77*int(p[0]) + 150*int(p[1]) + 29*int(p[2]) + 128) >> 8
		for c := range 3 {
			tone := (dark[c]*(255-l) + light[c]*l + 127) / 255
			p[c] = uint8((int(p[c])*(256-m) + tone*m + 128) >> 8)
		}
	}
	return out
}

func conformDuotone(t *testing.T, lang sdkLang) {
	set, name := loadSDKExample(t, lang, "duotone", nil, nil)
	tr, _ := set.Transformation(name)
	in := kitImage()
	for _, c := range []struct {
		raw         map[string]string
		dark, light [3]int
		mix         float64
	}{
		{map[string]string{}, [3]int{0, 0, 0}, [3]int{255, 255, 255}, 1},
		{map[string]string{"dark": "223", "light": "#FFEECC", "mix": "0.8"}, [3]int{0x22, 0x22, 0x33}, [3]int{0xff, 0xee, 0xcc}, 0.8},
		{map[string]string{"dark": "102030", "light": "f0e0d080", "mix": "0"}, [3]int{0x10, 0x20, 0x30}, [3]int{0xf0, 0xe0, 0xd0}, 0},
		{map[string]string{"light": "ff8000", "mix": "0.37"}, [3]int{0, 0, 0}, [3]int{0xff, 0x80, 0}, 0.37},
		{map[string]string{"dark": "ffffff", "light": "000000", "mix": "1"}, [3]int{255, 255, 255}, [3]int{0, 0, 0}, 1},
	} {
		samePixels(t, fmt.Sprintf("%s %v", name, c.raw), transformBytes(t, tr, in, c.raw), refDuotone(in, c.dark, c.light, c.mix))
	}
}

// logLines decodes the JSON log lines of one filter.
func logLines(t *testing.T, logs *lockedBuffer, filter string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if line["filter"] == filter {
			out = append(out, line)
		}
	}
	return out
}

func hasLine(lines []map[string]any, level, contains string) bool {
	for _, l := range lines {
		if msg, _ := l["msg"].(string); l["level"] == level && strings.Contains(msg, contains) {
			return true
		}
	}
	return false
}

func conformMinsize(t *testing.T, lang sdkLang) {
	var logs lockedBuffer
	set, name := loadSDKExample(t, lang, "minsize", &logs, nil)
	l := set.Listeners()[0]
	ctx := context.Background()

	// An upload large enough is tagged.
	ok := &recEvent{name: "images.post", info: map[string]any{"width": 640, "height": 480, "mime": "image/png", "size": 1234}}
	if err := l.Handle(ctx, ok); err != nil {
		t.Fatalf("640x480 upload: %v", err)
	}
	got, _ := json.Marshal(ok.md)
	if want := `{"minsize":{"checked":true,"height":480,"minHeight":200,"minWidth":200,"width":640}}`; string(got) != want {
		t.Errorf("metadata of a 640x480 upload: %s, want %s", got, want)
	}

	// A small one is rejected with the same status and message in every
	// language, and nothing of it is applied.
	small := &recEvent{name: "images.post", info: map[string]any{"width": 100, "height": 300, "mime": "image/png", "size": 99}}
	err := l.Handle(ctx, small)
	var fe *Error
	if !errors.As(err, &fe) || fe.Kind != KindRejected || fe.HTTPStatus() != 400 ||
		fe.PublicMessage() != "The image is 100x300 pixels; images must be at least 200x200" {
		t.Fatalf("100x300 upload: %v, want 400 The image is 100x300 pixels; images must be at least 200x200", err)
	}
	if small.md != nil {
		t.Errorf("the rejected upload got metadata %v", small.md)
	}

	// Counters, and the value it sets on stats.get beside them.
	if c := set.Counters()[name]; c["checked"] != 2 || c["rejected"] != 1 || len(c) != 2 {
		t.Errorf("counters %v, want checked 2 and rejected 1", c)
	}
	stats := &recEvent{name: "stats.get"}
	if err := l.Handle(ctx, stats); err != nil {
		t.Fatalf("stats.get: %v", err)
	}
	v, _ := json.Marshal(stats.stats[name]["minimum"])
	var minimum map[string]int
	if err := json.Unmarshal(v, &minimum); err != nil || minimum["width"] != 200 || minimum["height"] != 200 || len(minimum) != 2 {
		t.Errorf("stats_set minimum: %s, want {\"width\":200,\"height\":200}", v)
	}

	// Its log line, tagged with its name.
	if !hasLine(logLines(t, &logs, name), "INFO", "minsize: refused a 100x300 upload") {
		t.Errorf("no INFO line \"minsize: refused a 100x300 upload\" for %s in the log:\n%s", name, logs.String())
	}
	if st := l.Stats(); st.Calls != 3 || st.Rejections != 1 || st.Errors != 0 {
		t.Errorf("stats %+v, want 3 calls, 1 rejection, no error", st)
	}
}

// conformSettingsError: settings the code cannot read fail the call (500),
// with the reason in the log at ERROR from the guest itself, and the
// instance stays: the SDK reports the error, it does not trap.
func conformSettingsError(t *testing.T, lang sdkLang) {
	var logs lockedBuffer
	set, name := loadSDKExample(t, lang, "minsize", &logs, func(m map[string]any) {
		m["settings"] = map[string]any{"minWidth": "abc", "minHeight": 200}
	})
	l := set.Listeners()[0]
	err := l.Handle(context.Background(), &recEvent{name: "images.post", info: map[string]any{"width": 640, "height": 480}})
	var fe *Error
	if !errors.As(err, &fe) || fe.HTTPStatus() != 500 || fe.PublicMessage() != "Filter "+name+" failed" {
		t.Fatalf("bad settings: %v, want 500 Filter %s failed", err, name)
	}
	if !hasLine(logLines(t, &logs, name), "ERROR", "minWidth") {
		t.Errorf("no ERROR line naming minWidth for %s in the log:\n%s", name, logs.String())
	}
	if st := l.Stats(); st.Instances == 0 {
		t.Errorf("the instance was thrown away after an error the SDK reported")
	}
}

// conformOutOfMemory: an image the module cannot hold under
// limits.memoryMB fails the call (500), and the filter serves the next
// call.
func conformOutOfMemory(t *testing.T, lang sdkLang) {
	set, name := loadSDKExample(t, lang, "invert", nil, func(m map[string]any) {
		m["limits"] = map[string]any{"memoryMB": 24, "instances": 1}
	})
	tr, _ := set.Transformation(name)
	_, err := tr.Transform(context.Background(), image.NewNRGBA(image.Rect(0, 0, 3000, 3000)), map[string]string{"alpha": "false"}, nil)
	var fe *Error
	if !errors.As(err, &fe) || fe.HTTPStatus() != 500 {
		t.Fatalf("a 36 MB image under memoryMB 24: %v, want 500", err)
	}
	in := kitImage()
	samePixels(t, "the call after", transformBytes(t, tr, in, map[string]string{}), refInvert(in, false))
}
