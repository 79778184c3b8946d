package e2e

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The WebAssembly filters end to end: the SDK's examples built from source
// with `make -C wasm-sdk examples`, loaded by the binary, used over HTTP.

var (
	examplesOnce sync.Once
	examplesErr  error
)

// exampleFilters builds the SDK's examples once and copies every built one
// (filter.json and filter.wasm) into a fresh filters directory, so a test
// may change its copies.
func exampleFilters(t *testing.T) string {
	t.Helper()
	examplesOnce.Do(func() {
		cmd := exec.Command("make", "-C", "wasm-sdk", "examples")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			examplesErr = fmt.Errorf("make -C wasm-sdk examples: %v\n%s", err, out)
		}
	})
	if examplesErr != nil {
		t.Fatal(examplesErr)
	}
	dir := t.TempDir()
	examples, err := filepath.Glob("../wasm-sdk/examples/*/filter.wasm")
	if err != nil || len(examples) < 4 {
		t.Fatalf("built examples: %v %v", examples, err)
	}
	for _, wasm := range examples {
		src := filepath.Dir(wasm)
		dst := filepath.Join(dir, filepath.Base(src))
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"filter.json", "filter.wasm"} {
			b, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// filterStatus is one entry of GET /filters.
type filterStatus struct {
	Name        string `json:"name"`
	State       string `json:"state"`
	Loaded      bool   `json:"loaded"`
	ContentHash string `json:"contentHash"`
	Error       string `json:"error"`
	Manifest    struct {
		Kind string `json:"kind"`
	} `json:"manifest"`
	Stats struct {
		Calls      int64 `json:"calls"`
		Rejections int64 `json:"rejections"`
	} `json:"stats"`
}

func listFilters(t *testing.T, s *server, k key) map[string]filterStatus {
	t.Helper()
	r := s.get(t, "/filters", k)
	wantStatus(t, "GET /filters", r, http.StatusOK)
	var body struct{ Filters []filterStatus }
	r.JSON(t, &body)
	out := map[string]filterStatus{}
	for _, f := range body.Filters {
		out[f.Name] = f
	}
	return out
}

// settledFilters waits until no filter is loading (they load in the
// background from start) and returns GET /filters then.
func settledFilters(t *testing.T, s *server, k key) map[string]filterStatus {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list := listFilters(t, s, k)
		loading := false
		for _, f := range list {
			loading = loading || f.State == "loading"
		}
		if !loading {
			return list
		}
		if time.Now().After(deadline) {
			t.Fatalf("filters still loading: %+v", list)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestFilters(t *testing.T) {
	dir := exampleFilters(t)
	admin := key{Public: "admin", Private: "admin-secret"}
	alice := key{Public: "alice", Private: "alice-secret"}
	s := startServer(t, fmt.Sprintf(`filters:
  dir: %s
metrics:
  enabled: true
accessControl:
  keys:
    - publicKey: admin
      privateKey: admin-secret
      rules:
        - users: "*"
          group: all
    - publicKey: alice
      privateKey: alice-secret
      rules:
        - users: [alice]
          group: read-write
`, dir))

	list := settledFilters(t, s, admin)
	for _, name := range []string{"duotone", "pixelate", "minsize", "uploadstats", "faces"} {
		if f := list[name]; f.State != "ready" || !f.Loaded || len(f.ContentHash) != 32 || f.Error != "" {
			t.Fatalf("%s: %+v", name, f)
		}
	}
	if r := s.get(t, "/filters", alice); r.Status != http.StatusBadRequest && r.Status != http.StatusForbidden {
		t.Fatalf("alice listed filters: %s", r)
	}

	// minsize refuses a small upload with its 400, and nothing is stored.
	r := s.write(t, http.MethodPost, "/users/alice/images", testPNG(t, 50, 40, 1), alice)
	s.checkError(t, "small upload", r, http.StatusBadRequest, "The image is 50x40 pixels; images must be at least 200x200")
	var listing struct {
		Search struct{ Hits int } `json:"search"`
	}
	s.get(t, "/users/alice/images", alice).JSON(t, &listing)
	if listing.Search.Hits != 0 {
		t.Fatalf("%d images stored after a rejected upload", listing.Search.Hits)
	}

	// An upload that is not an image gets the service's usual answer, not
	// a filter failure: the service cannot describe it, so minsize is not called.
	r = s.write(t, http.MethodPost, "/users/alice/images", []byte("GIF89a but not really an image"), alice)
	if r.Status != http.StatusUnsupportedMediaType && r.Status != http.StatusBadRequest {
		t.Fatalf("garbage upload: %s", r)
	}
	if strings.Contains(r.errorMessage(), "Filter") {
		t.Fatalf("garbage upload answered as a filter failure: %s", r)
	}

	// A large enough upload is tagged by minsize and counted by uploadstats.
	r = s.write(t, http.MethodPost, "/users/alice/images", testPNG(t, 320, 240, 2), alice)
	wantStatus(t, "upload", r, http.StatusCreated)
	var up struct{ ImageIdentifier string }
	r.JSON(t, &up)
	var md struct {
		Minsize struct {
			Checked bool
			Width   int
		}
	}
	s.get(t, "/users/alice/images/"+up.ImageIdentifier+"/metadata", alice).JSON(t, &md)
	if !md.Minsize.Checked || md.Minsize.Width != 320 {
		t.Fatalf("metadata: %+v", md)
	}

	// A chain mixing native and guest steps.
	img := "/users/alice/images/" + up.ImageIdentifier + ".png"
	r = s.get(t, img+"?t[]=thumbnail:width=160,height=120&t[]=duotone:dark=202020,light=f0f0f0&t[]=border:width=2,height=2,color=ff0000", alice)
	wantStatus(t, "mixed chain", r, http.StatusOK)
	out, err := png.Decode(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	if b := out.Bounds(); b.Dx() != 164 || b.Dy() != 124 {
		t.Fatalf("mixed chain size %v", b)
	}
	assertGrey(t, out, image.Rect(4, 4, 160, 120))
	if c := rgba(out.At(0, 0)); c[0] < 200 || c[1] > 50 {
		t.Fatalf("border pixel %v, want red", c)
	}
	// A guest's parameters are checked before any pixel, naming them.
	r = s.get(t, img+"?t[]=duotone:dark=nope", alice)
	s.checkError(t, "bad guest parameter", r, http.StatusBadRequest, `duotone: Invalid value for dark: "nope" is not a hex colour (rgb, rrggbb or rrggbbaa)`)
	r = s.get(t, img+"?t[]=pixelate:size=0", alice)
	s.checkError(t, "guest parameter out of range", r, http.StatusBadRequest, "pixelate: Invalid value for size: must be between 1 and 512, got 0")

	// Custom stats: stats_add counters and a stats_set value, both under
	// the filter's name.
	var stats struct{ Custom map[string]any }
	s.do(t, http.MethodGet, "/stats", nil, nil).JSON(t, &stats)
	own, _ := stats.Custom["uploadstats"].(map[string]any)
	if own["uploads"] != 1.0 {
		t.Fatalf("no uploadstats counters in custom: %v", stats.Custom)
	}
	if _, ok := own["uploadSizeClasses"]; !ok {
		t.Fatalf("no stats_set value in custom.uploadstats: %v", stats.Custom)
	}
	list = listFilters(t, s, admin)
	if list["minsize"].Stats.Rejections != 1 || list["duotone"].Stats.Calls < 1 {
		t.Fatalf("counters: minsize %+v duotone %+v", list["minsize"].Stats, list["duotone"].Stats)
	}

	// Filter calls reach the Prometheus metrics, rejections counted as errors.
	metrics := string(s.do(t, http.MethodGet, "/metrics", nil, nil).Body)
	for _, want := range []string{
		`vitrine_filter_call_duration_seconds_count{filter="duotone",kind="transformation"}`,
		`vitrine_filter_errors_total{filter="minsize",kind="listener"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics lacks %s", want)
		}
	}

	// The faces example finds the face of pigo's test portrait at upload
	// and writes it as a point of interest, which smartSize and
	// gravity=faces then use.
	t.Run("faces", func(t *testing.T) {
		photo, err := os.ReadFile("../wasm-sdk/examples/faces/testdata/sample.jpg")
		if err != nil {
			t.Fatal(err)
		}
		r := s.write(t, http.MethodPost, "/users/alice/images", photo, alice)
		wantStatus(t, "portrait upload", r, http.StatusCreated)
		var up struct{ ImageIdentifier string }
		r.JSON(t, &up)
		var md struct {
			POI []struct {
				X, Y, Width, Height int
				Source              string
			}
		}
		s.get(t, "/users/alice/images/"+up.ImageIdentifier+"/metadata", alice).JSON(t, &md)
		if len(md.POI) != 1 || md.POI[0].Source != "faces" {
			t.Fatalf("metadata poi %+v, want one face", md.POI)
		}
		if f := md.POI[0]; f.X+f.Width/2 < 130 || f.X+f.Width/2 > 190 || f.Width < 120 {
			t.Fatalf("face %+v, want one about 200 pixels wide around x=160", f)
		}
		face := "/users/alice/images/" + up.ImageIdentifier + ".png"
		r = s.get(t, face+"?t[]=smartSize:width=100,height=100", alice)
		wantStatus(t, "smartSize", r, http.StatusOK)
		if got := r.Header.Get("X-Service-POIs-Used"); got != "1" {
			t.Fatalf("smartSize POIs-Used %q, want 1 (headers %v)", got, r.Header)
		}
		// A strip across the top: gravity=faces keeps the face's rows,
		// north the hair and the background above them.
		fc := s.get(t, face+"?t[]=crop:width=320,height=100,gravity=faces", alice)
		north := s.get(t, face+"?t[]=crop:width=320,height=100,gravity=north", alice)
		wantStatus(t, "gravity=faces", fc, http.StatusOK)
		wantStatus(t, "gravity=north", north, http.StatusOK)
		if bytes.Equal(fc.Body, north.Body) {
			t.Fatal("gravity=faces cropped as north does")
		}
	})

	// The C example, built when clang can target wasm32 (CI installs it):
	// the ABI works from C as from Go.
	t.Run("invert-c", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(dir, "invert-c", "filter.wasm")); err != nil {
			t.Skip("invert-c was not built (make -C wasm-sdk examples skips C without clang, lld, wasi-libc and libclang-rt-dev-wasm32)")
		}
		if f := listFilters(t, s, admin)["invert-c"]; !f.Loaded || f.Error != "" {
			t.Fatalf("invert-c: %+v", f)
		}
		orig := s.get(t, img, alice)
		wantStatus(t, "original", orig, http.StatusOK)
		inv := s.get(t, img+"?t[]=invert-c", alice)
		wantStatus(t, "invert-c", inv, http.StatusOK)
		a, err := png.Decode(bytes.NewReader(orig.Body))
		if err != nil {
			t.Fatal(err)
		}
		b, err := png.Decode(bytes.NewReader(inv.Body))
		if err != nil {
			t.Fatal(err)
		}
		if a.Bounds() != b.Bounds() {
			t.Fatalf("invert-c changed the size: %v -> %v", a.Bounds(), b.Bounds())
		}
		for y := 0; y < a.Bounds().Dy(); y += 3 {
			for x := 0; x < a.Bounds().Dx(); x += 3 {
				p, q := rgba(a.At(x, y)), rgba(b.At(x, y))
				if q[0] != 255-p[0] || q[1] != 255-p[1] || q[2] != 255-p[2] || q[3] != p[3] {
					t.Fatalf("pixel (%d,%d): %v inverted to %v", x, y, p, q)
				}
			}
		}
	})

	t.Run("hot reload while requests run", func(t *testing.T) {
		hotReload(t, s, dir, img, admin, alice)
	})
}

// hotReload swaps pixelate's and duotone's manifests (new content hashes)
// through POST /filters/reload and SIGHUP while clients keep requesting
// both of them: every request succeeds, the new versions serve
// afterwards, and a changed duotone is not answered from a stale variant.
func hotReload(t *testing.T, s *server, dir, img string, admin, alice key) {
	before := listFilters(t, s, admin)
	duoURL := img + "?t[]=duotone"
	first := s.get(t, duoURL, alice)
	wantStatus(t, "duotone before", first, http.StatusOK)

	var n atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	failures := make(chan string, 100)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := n.Add(1)
				// Both filters being swapped, with new parameters each time
				// so the variant cache never answers.
				url := fmt.Sprintf("%s?t[]=pixelate:size=%d", img, 1+i%500)
				if i%2 == 0 {
					url = fmt.Sprintf("%s?t[]=duotone:dark=%06x", img, i%0xffffff)
				}
				r := s.get(t, url, alice)
				if r.Status != http.StatusOK {
					failures <- r.String()
					return
				}
			}
		}()
	}
	edit := func(name, old, new string) {
		p := filepath.Join(dir, name, "filter.json")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%s: %q not found", p, old)
		}
		if err := os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("pixelate", `"default": 10`, `"default": 12`)
	r := s.write(t, http.MethodPost, "/filters/reload", nil, admin)
	wantStatus(t, "POST /filters/reload", r, http.StatusOK)
	edit("duotone", `"default": "000000"`, `"default": "400000"`)
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for listFilters(t, s, admin)["duotone"].ContentHash == before["duotone"].ContentHash {
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP did not reload duotone")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Let the clients run on the new versions for a moment.
	for start := n.Load(); n.Load() < start+6; {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Errorf("request failed during a reload: %s", f)
	}
	after := listFilters(t, s, admin)
	if after["pixelate"].ContentHash == before["pixelate"].ContentHash || !after["pixelate"].Loaded {
		t.Fatalf("pixelate not reloaded: %+v", after["pixelate"])
	}
	if n.Load() < 6 {
		t.Fatalf("only %d requests ran during the reloads", n.Load())
	}
	second := s.get(t, duoURL, alice)
	wantStatus(t, "duotone after", second, http.StatusOK)
	if bytes.Equal(first.Body, second.Body) {
		t.Fatal("the changed duotone was answered from a stale variant")
	}

	// A broken new version is refused; the old one keeps serving.
	if err := os.WriteFile(filepath.Join(dir, "pixelate", "filter.wasm"), []byte("broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = s.write(t, http.MethodPost, "/filters/reload", nil, admin)
	wantStatus(t, "reload with a broken filter", r, http.StatusOK)
	px := listFilters(t, s, admin)["pixelate"]
	if px.State != "failed" || !px.Loaded || px.ContentHash != after["pixelate"].ContentHash || !strings.Contains(px.Error, "filter.wasm") {
		t.Fatalf("broken pixelate: %+v", px)
	}
	wantStatus(t, "old pixelate serves", s.get(t, img+"?t[]=pixelate:size=7", alice), http.StatusOK)
}

func rgba(c interface{ RGBA() (r, g, b, a uint32) }) [4]uint32 {
	r, g, b, a := c.RGBA()
	return [4]uint32{r >> 8, g >> 8, b >> 8, a >> 8}
}

// assertGrey checks that a duotone between two greys left only greys.
func assertGrey(t *testing.T, img image.Image, rect image.Rectangle) {
	t.Helper()
	for y := rect.Min.Y; y < rect.Max.Y; y += 7 {
		for x := rect.Min.X; x < rect.Max.X; x += 7 {
			c := rgba(img.At(x, y))
			if c[0] != c[1] || c[1] != c[2] || c[0] < 0x20 || c[0] > 0xf0 {
				t.Fatalf("pixel (%d,%d) = %v is not a grey between 202020 and f0f0f0", x, y, c)
			}
		}
	}
}

// TestFilterCLI runs the authors' test kit: `vitrine filter check` and
// `vitrine filter test` on the built examples.
func TestFilterCLI(t *testing.T) {
	dir := exampleFilters(t)
	run := func(args ...string) (string, error) {
		cmd := exec.Command(binary, args...)
		cmd.Env = childEnv()
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("filter", "check", filepath.Join(dir, "duotone"))
	if err != nil || !strings.Contains(out, "ok: duotone 1.0.0 (transformation, ABI 1)") {
		t.Fatalf("check: %v\n%s", err, out)
	}
	if out, err := run("filter", "check", filepath.Join(dir, "minsize")); err != nil || !strings.Contains(out, "ok: minsize") {
		t.Fatalf("check listener: %v\n%s", err, out)
	}
	// Inside the filter's folder, "." names it.
	here := exec.Command(binary, "filter", "check", ".")
	here.Dir, here.Env = filepath.Join(dir, "duotone"), childEnv()
	if out, err := here.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok: duotone 1.0.0") {
		t.Fatalf("check . in the folder: %v\n%s", err, out)
	}

	in := filepath.Join(t.TempDir(), "in.png")
	if err := os.WriteFile(in, testPNG(t, 100, 80, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out.png")
	out, err = run("filter", "test", filepath.Join(dir, "pixelate"), "--image", in, "--param", "size=20", "--out", dst)
	if err != nil || !strings.Contains(out, "wrote "+dst+": 100x80 image/png") {
		t.Fatalf("test: %v\n%s", err, out)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	// Blocks of 20: the pixels of one block are equal.
	if rgba(img.At(0, 0)) != rgba(img.At(19, 19)) || rgba(img.At(0, 0)) == rgba(img.At(99, 79)) {
		t.Fatalf("not pixelated: %v %v %v", rgba(img.At(0, 0)), rgba(img.At(19, 19)), rgba(img.At(99, 79)))
	}
	out, err = run("filter", "test", filepath.Join(dir, "pixelate"), "--image", in, "--param", "size=0", "--out", dst)
	if err == nil || !strings.Contains(out, "pixelate: Invalid value for size") {
		t.Fatalf("test with a bad parameter: %v\n%s", err, out)
	}

	broken := filepath.Join(t.TempDir(), "duotone")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"filter.json", "filter.wasm"} {
		b, _ := os.ReadFile(filepath.Join(dir, "duotone", f))
		if f == "filter.wasm" {
			b = b[:len(b)/2]
		}
		if err := os.WriteFile(filepath.Join(broken, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := run("filter", "check", broken); err == nil || !strings.Contains(out, "filter.wasm") {
		t.Fatalf("check of a truncated module: %v\n%s", err, out)
	}
}
