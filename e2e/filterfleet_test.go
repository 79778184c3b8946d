package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// clockVersion is duotoneVersion's folder with a manifest that asks for
// the clock capability (the module does not read the clock; asking is
// what an instance grants or not).
func clockVersion(t *testing.T, examples string) string {
	t.Helper()
	dir := duotoneVersion(t, examples, "4.0.0", "000000", "ffffff")
	path := filepath.Join(dir, "filter.json")
	var m map[string]any
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &m) != nil {
		t.Fatalf("manifest: %v", err)
	}
	m["capabilities"] = []string{"clock"}
	data, _ = json.Marshal(m)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFilterDeployFleet: two instances on one PostgreSQL and one blob
// store, A granting the clock capability and B not. A filter asking for
// the clock pushed through B (which does not grant it) is accepted; the
// push says it runs on A and is unavailable on B, naming the capability,
// and fails as not active everywhere; both instances stay ready; every
// render of the filter on either instance, once the push changed the
// active set, answers 200 or 503 with Retry-After, never 400; afterwards A renders it and B answers
// 503 naming the capability, and GET /filters says the same per instance.
func TestFilterDeployFleet(t *testing.T) {
	dsn := postgresDSN(t)
	examples := exampleFilters(t)
	admin := key{Public: "admin", Private: "admin-secret"}
	common := fmt.Sprintf("database: %q\nstorage: %q\n", dsn, "file://"+t.TempDir()) + `accessControl:
  keys:
    - publicKey: admin
      privateKey: admin-secret
      rules: [{users: "*", group: all}]
filters:
  syncInterval: 500ms
`
	a := startServer(t, common+"  allow: [clock]\n")
	b := startServer(t, common)
	for _, s := range []*server{a, b} {
		waitFor(t, s.URL+" ready", func() bool { st, _ := probe(t, s, "/readyz"); return st == http.StatusOK })
	}
	id := uploadMany(t, a, "alice", admin, 1, func(i int) []byte { return testPNG(t, 16, 16, byte(i)) })[0]
	path := "/users/alice/images/" + id + ".png?t[]=duotone"

	// Renders on both instances until the push has answered. Before the
	// push has changed the active set, duotone is no filter (400); once
	// any render answered otherwise it has, and no render sent after that
	// may answer 400 on either instance.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var changed atomic.Bool
	seen := map[string]map[int]int{}
	for _, s := range []*server{a, b} {
		seen[s.URL] = map[int]int{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				after := changed.Load()
				r := s.get(t, path, admin)
				mu.Lock()
				seen[s.URL][r.Status]++
				mu.Unlock()
				switch {
				case r.Status == http.StatusBadRequest && after:
					t.Errorf("%s: a render after the active set changed answered 400: %s", s.URL, r)
				case r.Status == http.StatusBadRequest:
				case r.Status != http.StatusOK && r.Status != http.StatusServiceUnavailable:
					t.Errorf("%s: a render answered %s, want 200 or 503", s.URL, r)
				case r.Status == http.StatusServiceUnavailable && r.Header.Get("Retry-After") == "":
					t.Errorf("%s: 503 without Retry-After: %s", s.URL, r)
				default:
					changed.Store(true)
				}
			}
		}()
	}
	out, errOut, err := runCLI(t, map[string]string{"VITRINE_URL": b.URL, "VITRINE_PUBLIC_KEY": admin.Public,
		"VITRINE_PRIVATE_KEY": admin.Private}, "filter", "push", clockVersion(t, examples))
	close(stop)
	wg.Wait()
	t.Logf("push:\n%s%s", out, errOut)
	t.Logf("renders by status while pushing: %v", seen)

	t.Run("the push says where it runs", func(t *testing.T) {
		hostA, hostB := strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")
		if err == nil || !strings.Contains(errOut, "active on 1 of 2 instances") {
			t.Fatalf("push of a filter B cannot run: %v, want a failure saying it is active on 1 of 2 instances", err)
		}
		if strings.Contains(out, "is active") {
			t.Fatalf("push says %q while B cannot run it", out)
		}
		var lineA, lineB string
		for _, line := range strings.Split(out, "\n") {
			switch {
			case strings.Contains(line, hostA):
				lineA = line
			case strings.Contains(line, hostB):
				lineB = line
			}
		}
		if !strings.HasSuffix(lineA, ": ready") || !strings.Contains(lineB, ": unavailable") || !strings.Contains(lineB, `capability "clock"`) {
			t.Fatalf("push lines: A %q, B %q; want A ready, B unavailable naming the clock", lineA, lineB)
		}
	})

	if !changed.Load() {
		t.Fatalf("no render answered 200 or 503 while the filter rolled out: %v", seen)
	}

	t.Run("after the push", func(t *testing.T) {
		wantStatus(t, "render on A", a.get(t, path, admin), http.StatusOK)
		r := b.get(t, path, admin)
		if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), "clock") {
			t.Fatalf("render on B: %s, want 503 with Retry-After naming the clock", r)
		}
		for _, s := range []*server{a, b} {
			if st, body := probe(t, s, "/readyz"); st != http.StatusOK {
				t.Fatalf("%s /readyz: %d %s, want 200", s.URL, st, body)
			}
		}
		var rep struct {
			Deployed []struct {
				Name    string
				Rollout struct {
					State     string
					Instances []struct{ Instance, State, Error string }
				}
			}
		}
		r = a.get(t, "/filters", admin)
		wantStatus(t, "GET /filters", r, http.StatusOK)
		r.JSON(t, &rep)
		if len(rep.Deployed) != 1 || rep.Deployed[0].Rollout.State != "partial" || len(rep.Deployed[0].Rollout.Instances) != 2 {
			t.Fatalf("GET /filters deployed: %+v, want duotone partial on 2 instances", rep.Deployed)
		}
	})
}
