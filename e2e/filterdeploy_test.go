package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Filters deployed through the API (filters/README.md, Filters through the API), on
// two instances sharing PostgreSQL and S3 (versitygw).

// deployedFilter is an entry of GET /filters' deployed.
type deployedFilter struct {
	Name, Version, Previous, Canary string
	Enabled                         bool
	Percent                         int
	Versions                        []struct{ Version string }
}

// filterReport is GET /filters' deployed and instances.
type filterReport struct {
	Filters []struct {
		Name, Source, Version, State string
	}
	Deployed  []deployedFilter
	Instances []struct {
		Instance string
		Filters  []struct{ Name, Source, Version, State string }
	}
}

func filterReportOf(t *testing.T, s *server, k key) filterReport {
	t.Helper()
	r := s.get(t, "/filters", k)
	wantStatus(t, "GET /filters", r, http.StatusOK)
	var rep filterReport
	r.JSON(t, &rep)
	return rep
}

// duotoneVersion writes a copy of the duotone example whose manifest says
// version and takes dark and light as its defaults, and returns its folder.
func duotoneVersion(t *testing.T, examples, version, dark, light string) string {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join(examples, "duotone", "filter.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	data, err := os.ReadFile(filepath.Join(examples, "duotone", "filter.json"))
	if err != nil || json.Unmarshal(data, &m) != nil {
		t.Fatalf("duotone's manifest: %v", err)
	}
	m["version"] = version
	params := m["params"].(map[string]any)
	params["dark"].(map[string]any)["default"] = dark
	params["light"].(map[string]any)["default"] = light
	dir := filepath.Join(t.TempDir(), "duotone")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ = json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "filter.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "filter.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFilterDeployTwoInstances(t *testing.T) {
	dsn := postgresDSN(t)
	gw := startVersitygw(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "scale")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "scalesecret")
	examples := exampleFilters(t)
	admin := key{Public: "admin", Private: "admin-secret"}
	const syncInterval = 500 * time.Millisecond
	// The shared variant cache is on: a render of the same URL after a
	// push, a rollback or under a canary must come from the version in
	// force, never from a variant another version made (the variant key
	// holds each guest step's content hash).
	cfg := fmt.Sprintf("database: %q\nstorage: %q\n", dsn, gw.url()) + `cacheVariants: true
filters:
  syncInterval: 500ms
accessControl:
  keys:
    - publicKey: admin
      privateKey: admin-secret
      rules: [{users: "*", group: all}]
`
	a := startServer(t, cfg)
	b := startServer(t, cfg)
	cli := func(s *server, args ...string) (string, string, error) {
		return runCLI(t, map[string]string{"VITRINE_URL": s.URL, "VITRINE_PUBLIC_KEY": admin.Public,
			"VITRINE_PRIVATE_KEY": admin.Private}, args...)
	}
	grey := duotoneVersion(t, examples, "1.0.0", "000000", "ffffff")
	red := duotoneVersion(t, examples, "2.0.0", "ff0000", "ff0000")

	// Each render and both instances' are compared as bytes: one version
	// gives one output, whichever instance renders it.
	render := func(s *server, id string) []byte {
		t.Helper()
		r := s.get(t, "/users/alice/images/"+id+".png?t[]=duotone", admin)
		wantStatus(t, "render on "+s.URL, r, http.StatusOK)
		return r.Body
	}
	isRed := func(body []byte) bool {
		t.Helper()
		img, err := png.Decode(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r, g, bl, _ := img.At(0, 0).RGBA()
		return r>>8 > 200 && g>>8 < 50 && bl>>8 < 50
	}
	// until polls s until its render of id satisfies ok.
	until := func(s *server, id string, within time.Duration, ok func([]byte) bool) ([]byte, time.Duration) {
		t.Helper()
		start := time.Now()
		for {
			r := s.get(t, "/users/alice/images/"+id+".png?t[]=duotone", admin)
			if r.Status == http.StatusOK && ok(r.Body) {
				return r.Body, time.Since(start)
			}
			if time.Since(start) > within {
				t.Fatalf("%s did not serve the expected output within %s: last %s", s.URL, within, r)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ids := uploadMany(t, a, "alice", admin, 200, func(i int) []byte { return testPNG(t, 16, 16, byte(i)) })
	id := ids[0]
	var greyOut []byte

	t.Run("push", func(t *testing.T) {
		out, errOut, err := cli(a, "filter", "push", grey)
		if err != nil || !strings.Contains(out, "is active") {
			t.Fatalf("filter push: %v\n%s%s", err, out, errOut)
		}
		var took time.Duration
		greyOut, took = until(a, id, time.Minute, func(b []byte) bool { return !isRed(b) })
		t.Logf("A serves the first version %s after the push", took)
		onB, took := until(b, id, time.Minute, func([]byte) bool { return true })
		if !bytes.Equal(onB, greyOut) {
			t.Fatal("B's render differs from A's")
		}
		t.Logf("B serves it %s later", took)
	})

	t.Run("new version reaches B", func(t *testing.T) {
		start := time.Now()
		if out, errOut, err := cli(a, "filter", "push", red); err != nil {
			t.Fatalf("filter push: %v\n%s%s", err, out, errOut)
		}
		onA, _ := until(a, id, time.Minute, isRed)
		onB, _ := until(b, id, time.Minute, isRed)
		took := time.Since(start)
		if !bytes.Equal(onA, onB) {
			t.Fatal("the new version renders differently on A and B")
		}
		// The bound: syncInterval, plus compiling (a 3.4 MB Go module
		// compiles in seconds on an idle core; the test allows for a
		// loaded machine).
		if took > syncInterval+30*time.Second {
			t.Fatalf("B took %s to serve the new version", took)
		}
		t.Logf("both instances serve the new version %s after the push (syncInterval %s)", took, syncInterval)
		rep := filterReportOf(t, b, admin)
		if len(rep.Deployed) != 1 || len(rep.Deployed[0].Versions) != 2 || rep.Deployed[0].Previous == "" {
			t.Fatalf("deployed: %+v", rep.Deployed)
		}
		want := rep.Deployed[0].Version
		deadline := time.Now().Add(10 * time.Second)
		for {
			rep = filterReportOf(t, b, admin)
			running := 0
			for _, in := range rep.Instances {
				for _, f := range in.Filters {
					if f.Name == "duotone" && f.Version == want && f.State == "ready" {
						running++
					}
				}
			}
			if running == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET /filters does not show both instances on %s: %+v", want, rep.Instances)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("rollback", func(t *testing.T) {
		out, errOut, err := cli(b, "filter", "rollback", "duotone")
		if err != nil || !strings.Contains(out, "rolled back") {
			t.Fatalf("filter rollback: %v\n%s%s", err, out, errOut)
		}
		for _, s := range []*server{a, b} {
			got, _ := until(s, id, time.Minute, func(b []byte) bool { return !isRed(b) })
			if !bytes.Equal(got, greyOut) {
				t.Fatalf("%s after the rollback differs from the first version's output", s.URL)
			}
		}
	})

	t.Run("canary at 50%", func(t *testing.T) {
		rep := filterReportOf(t, a, admin)
		d := rep.Deployed[0]
		r := a.writeJSON(t, http.MethodPatch, "/filters/duotone", map[string]any{"canary": d.Previous[:12], "percent": 50}, admin)
		wantStatus(t, "PATCH canary", r, http.StatusOK)
		// Wait until both have loaded the canary: some image renders red.
		for _, s := range []*server{a, b} {
			deadline := time.Now().Add(time.Minute)
			for {
				st := filterReportOf(t, s, admin)
				ready := false
				for _, f := range st.Filters {
					ready = ready || (f.Name == "duotone@canary" && f.State == "ready")
				}
				if ready {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s has not loaded the canary: %+v", s.URL, st.Filters)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		onCanary := make([]bool, len(ids))
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4)
		for i, id := range ids {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				first := render(a, id)
				if !bytes.Equal(render(b, id), first) || !bytes.Equal(render(a, id), first) {
					t.Errorf("image %s: the renders differ between instances or requests", id)
				}
				mu.Lock()
				onCanary[i] = isRed(first)
				mu.Unlock()
			}()
		}
		wg.Wait()
		n := 0
		for _, c := range onCanary {
			if c {
				n++
			}
		}
		t.Logf("the canary served %d of %d images", n, len(ids))
		if n < 80 || n > 120 {
			t.Fatalf("the canary at 50%% served %d of %d images, want 40-60%%", n, len(ids))
		}
	})

	t.Run("a version that fails to compile", func(t *testing.T) {
		before := filterReportOf(t, a, admin).Deployed
		broken := filepath.Join(t.TempDir(), "duotone")
		if err := os.MkdirAll(broken, 0o755); err != nil {
			t.Fatal(err)
		}
		manifest, _ := os.ReadFile(filepath.Join(grey, "filter.json"))
		_ = os.WriteFile(filepath.Join(broken, "filter.json"), bytes.Replace(manifest, []byte(`"1.0.0"`), []byte(`"3.0.0"`), 1), 0o644)
		_ = os.WriteFile(filepath.Join(broken, "filter.wasm"), append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte{0xff}, 64)...), 0o644)
		out, errOut, err := cli(b, "filter", "push", broken)
		if err == nil || !strings.Contains(errOut, "400") || !strings.Contains(errOut, "filter.wasm") {
			t.Fatalf("pushing a broken module: %v\n%s%s", err, out, errOut)
		}
		t.Logf("refused: %s", strings.TrimSpace(errOut))
		time.Sleep(2 * syncInterval)
		for _, s := range []*server{a, b} {
			rep := filterReportOf(t, s, admin)
			if len(rep.Deployed) != 1 || rep.Deployed[0].Version != before[0].Version || len(rep.Deployed[0].Versions) != len(before[0].Versions) {
				t.Fatalf("%s: deployed %+v after a refused push, want %+v", s.URL, rep.Deployed, before)
			}
			for _, f := range rep.Filters {
				if f.State == "failed" {
					t.Fatalf("%s lists %+v", s.URL, f)
				}
			}
			if got := render(s, ids[0]); isRed(got) != isRed(render(a, ids[0])) {
				t.Fatalf("%s changed its output after a refused push", s.URL)
			}
		}
	})
}
