package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/gif"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The parts of wasm-sdk/ABI.md that only the whole server shows: where
// stats_set values land in GET /stats, and how a guest step runs on an
// animation. The guest is package filters' raw-ABI test kit, whose
// behaviour its manifest's settings pick.

var (
	kitOnce sync.Once
	kitPath string
	kitErr  error
)

// kitGuest builds filters/testdata/kit as a reactor, once.
func kitGuest(t *testing.T) string {
	t.Helper()
	kitOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vitrine-e2e-kit-")
		if err != nil {
			kitErr = err
			return
		}
		kitPath = filepath.Join(dir, "kit.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", kitPath, "./filters/testdata/kit")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			kitErr = fmt.Errorf("build the kit guest: %v\n%s", err, out)
		}
	})
	if kitErr != nil {
		t.Fatal(kitErr)
	}
	return kitPath
}

// writeKit adds the filter name, running the kit in mode, to the filters
// directory dir; manifest adds to the manifest, settings to its settings.
func writeKit(t *testing.T, dir, name, kind, mode string, manifest, settings map[string]any) {
	t.Helper()
	m := map[string]any{"name": name, "version": "1", "abi": 1, "kind": kind}
	for k, v := range manifest {
		m[k] = v
	}
	s := map[string]any{"mode": mode}
	for k, v := range settings {
		s[k] = v
	}
	m["settings"] = s
	mj, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(kitGuest(t))
	if err != nil {
		t.Fatal(err)
	}
	fdir := filepath.Join(dir, name)
	if err := os.MkdirAll(fdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fdir, "filter.json"), mj, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fdir, "filter.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFilterStats checks GET /stats with hostile stats.get listeners: each
// filter's values and counters live under custom.<its name>, whatever
// names it gives and in whichever order the listeners run, a value replaces
// the counter of its name, and a flood of values leaves /stats bounded.
func TestFilterStats(t *testing.T) {
	dir := t.TempDir()
	stats := map[string]any{"events": []string{"stats.get"}}
	at := func(priority int) map[string]any {
		return map[string]any{"events": []string{"stats.get"}, "priority": priority}
	}
	writeKit(t, dir, "victim", "listener", "statsSet", stats, map[string]any{"add": "n", "set": [][2]string{{"note", `"mine"`}}})
	spoof := map[string]any{"set": [][2]string{{"victim", `{"n":-1,"note":"theirs"}`}, {"victim.note", `"theirs"`}, {"n", `-1`}}}
	// Before and after the listener that adds the counters (priority 0).
	writeKit(t, dir, "early", "listener", "statsSet", at(10), spoof)
	writeKit(t, dir, "late", "listener", "statsSet", at(-10), spoof)
	for _, p := range []int{10, -10} {
		writeKit(t, dir, fmt.Sprintf("self%d", p+10), "listener", "statsSet", at(p),
			map[string]any{"add": "hits", "set": [][2]string{{"hits", `"replaced"`}}})
	}
	writeKit(t, dir, "flood", "listener", "statsFlood", stats, map[string]any{"count": 1000, "size": 10000})
	writeKit(t, dir, "huge", "listener", "statsFlood", stats, map[string]any{"count": 100, "size": 1 << 20})
	s := startServer(t, adminOnlyConfig+fmt.Sprintf("filters:\n  dir: %s\n", dir))
	settledFilters(t, s, key{Public: "admin", Private: "admin-private"}) // filters load in the background

	var first struct{ Custom map[string]json.RawMessage }
	r := s.do(t, http.MethodGet, "/stats", nil, nil)
	wantStatus(t, "first GET /stats", r, http.StatusOK)
	r.JSON(t, &first)
	r = s.do(t, http.MethodGet, "/stats", nil, nil)
	wantStatus(t, "second GET /stats", r, http.StatusOK)
	var second struct{ Custom map[string]json.RawMessage }
	r.JSON(t, &second)

	want := map[string]string{
		"victim": `{"n":1,"note":"mine"}`, // counted once before this response
		"early":  `{"n":-1,"victim":{"n":-1,"note":"theirs"},"victim.note":"theirs"}`,
		"late":   `{"n":-1,"victim":{"n":-1,"note":"theirs"},"victim.note":"theirs"}`,
		"self20": `{"hits":"replaced"}`,
		"self0":  `{"hits":"replaced"}`,
	}
	for name, w := range want {
		var got, exp any
		_ = json.Unmarshal(second.Custom[name], &got)
		_ = json.Unmarshal([]byte(w), &exp)
		if a, b := fmt.Sprint(got), fmt.Sprint(exp); a != b {
			t.Errorf("custom.%s = %s, want %s", name, second.Custom[name], w)
		}
	}
	if len(second.Custom) != len(want)+1 { // and flood; huge set nothing
		t.Errorf("custom has %d entries, want %d: %v", len(second.Custom), len(want)+1, keys(second.Custom))
	}
	// flood's values fit 256 KiB; each of huge's is over 64 KiB.
	if n := len(second.Custom["flood"]); n < 200<<10 || n > 256<<10+256*80 {
		t.Errorf("custom.flood is %d bytes, want about 256 KiB", n)
	}
	if len(r.Body) > 300<<10 {
		t.Errorf("GET /stats is %d bytes", len(r.Body))
	}
	if _, ok := first.Custom["huge"]; ok {
		t.Errorf("huge's values reached GET /stats")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestFilterTransformationCalls checks that a guest step runs once per
// frame of an animation served animated, once for a still image of it,
// that a guest whose frames come out in different sizes fails the request,
// and that a guest reads the image's stored metadata.
func TestFilterTransformationCalls(t *testing.T) {
	dir := t.TempDir()
	writeKit(t, dir, "invert", "transformation", "invert", nil, nil)
	writeKit(t, dir, "md", "transformation", "metadata", nil, nil)
	writeKit(t, dir, "grow", "transformation", "grow", map[string]any{"limits": map[string]any{"instances": 1}}, nil)
	admin := key{Public: "admin", Private: "admin-private"}
	s := startServer(t, adminOnlyConfig+fmt.Sprintf("filters:\n  dir: %s\n", dir))
	settledFilters(t, s, admin) // filters load in the background
	anim, delays := animatedGIF(t, 5, 0)
	wantStatus(t, "upload", s.write(t, http.MethodPost, "/users/alice/images", anim, admin), http.StatusCreated)
	base := "/users/alice/images/" + md5Hex(anim)
	calls := func() int64 { return listFilters(t, s, admin)["invert"].Stats.Calls }

	before := calls()
	r := s.get(t, base+".gif?t[]=invert", admin)
	wantStatus(t, "inverted GIF", r, http.StatusOK)
	g, err := gif.DecodeAll(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Image) != len(delays) {
		t.Errorf("inverted GIF has %d frames, want %d", len(g.Image), len(delays))
	}
	if n := calls() - before; n != int64(len(delays)) {
		t.Errorf("the guest ran %d times for %d frames", n, len(delays))
	}
	before = calls()
	wantStatus(t, "inverted PNG", s.get(t, base+".png?t[]=invert", admin), http.StatusOK)
	if n := calls() - before; n != 1 {
		t.Errorf("the guest ran %d times for a still image of the animation, want 1", n)
	}
	r = s.get(t, base+".gif?t[]=grow", admin)
	if r.Status != http.StatusInternalServerError {
		t.Errorf("frames of different sizes: %s, want 500", r)
	}

	// The kit rejects with what metadata_get and event_get answered.
	wantStatus(t, "PUT metadata", s.writeJSON(t, http.MethodPut, base+"/metadata", map[string]any{"title": "x"}, admin), http.StatusOK)
	r = s.get(t, base+".png?t[]=md", admin)
	var seen struct {
		Metadata  string
		EventCode int32
	}
	if err := json.Unmarshal([]byte(r.errorMessage()), &seen); r.Status != http.StatusBadRequest || err != nil {
		t.Fatalf("md: %s", r)
	}
	if seen.Metadata != `{"title":"x"}` || seen.EventCode != -4 {
		t.Errorf("the guest read metadata %s and event_get %d, want {\"title\":\"x\"} and -4", seen.Metadata, seen.EventCode)
	}
}

// TestFilterMetadataSetCodes checks metadata_set's answers against the
// service's own metadata rules (ABI.md section 5, "Metadata"): ERR_LIMIT
// (-5) for a document over limits.maxMetadataBytes, ERR_INVALID (-3) for
// text that is not UTF-8, a key the service refuses or anything but an
// object, in each event that allows metadata_set.
func TestFilterMetadataSetCodes(t *testing.T) {
	dir := t.TempDir()
	docs := []string{"<big 10>", "<big 70000>", "<invalid utf-8>", `{"a.b":1}`, `[1]`}
	writeKit(t, dir, "md", "listener", "setMetadata", map[string]any{"events": []string{"images.post", "metadata.put", "metadata.post"}},
		map[string]any{"docs": docs})
	admin := key{Public: "admin", Private: "admin-private"}
	s := startServer(t, adminOnlyConfig+fmt.Sprintf("filters:\n  dir: %s\n", dir))
	settledFilters(t, s, admin) // filters load in the background
	const want = "[0,-5,-3,-3,-3]"
	img := testPNG(t, 8, 8, 1)
	s.checkError(t, "upload", s.write(t, http.MethodPost, "/users/alice/images", img, admin), http.StatusBadRequest, want)
	for _, method := range []string{http.MethodPut, http.MethodPost} {
		r := s.writeJSON(t, method, "/users/alice/images/"+md5Hex(img)+"/metadata", map[string]any{"title": "x"}, admin)
		s.checkError(t, method+" metadata", r, http.StatusBadRequest, want)
	}
}
