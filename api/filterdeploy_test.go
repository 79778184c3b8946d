package api_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/storage"
)

// standInHost takes the WebAssembly host's place: the API's part is what
// these tests check (the host's check is tested in package filters, and
// both together end to end in e2e/filterdeploy_test.go). A module
// "broken" is refused as a compile failure is.
type standInHost struct {
	syncs atomic.Int32
	wait  time.Duration
}

func (h *standInHost) Filters() []api.FilterStatus { return nil }
func (h *standInHost) ReloadFilters(context.Context) ([]api.FilterStatus, error) {
	return nil, nil
}

func (h *standInHost) CheckFilter(_ context.Context, name string, manifest, wasm []byte) (string, string, error) {
	if string(wasm) == "broken" {
		return "", "", &api.Error{Status: http.StatusBadRequest, Msg: "filter " + name + ": filter.wasm: invalid magic number"}
	}
	var m struct{ Kind string }
	_ = json.Unmarshal(manifest, &m)
	sum := sha256.Sum256(append(append([]byte{}, manifest...), wasm...))
	return hex.EncodeToString(sum[:]), m.Kind, nil
}

func (h *standInHost) SyncFilters() { h.syncs.Add(1) }

// DeployLimits: modules of 1 MiB, as filters.maxModuleBytes would say, and
// no wait for the instances (TestFilterRollout waits).
func (h *standInHost) DeployLimits() api.DeployLimits {
	return api.DeployLimits{MaxModuleBytes: 1 << 20, RolloutWait: h.wait}
}

func manifestOf(kind, version string) []byte {
	return []byte(`{"name":"duotone","version":"` + version + `","abi":1,"kind":"` + kind + `"}`)
}

func TestFilterDeploy(t *testing.T) {
	host := &standInHost{}
	e := newEnvWith(t, testConfig(), func(d *api.Deps) { d.Filters = host })
	put := func(path string, manifest, wasm []byte) response {
		t.Helper()
		return e.signed(http.MethodPut, path, adminKey, adminPriv, api.FilterBundleTar(manifest, wasm),
			"Content-Type", "application/x-tar")
	}
	deployed := func(r response) api.DeployedFilter {
		t.Helper()
		var d api.DeployedFilter
		if err := json.Unmarshal(r.body, &d); err != nil {
			t.Fatalf("%s: %v", r.body, err)
		}
		return d
	}
	want := func(what string, r response, status int) {
		t.Helper()
		if r.StatusCode != status {
			t.Fatalf("%s: %d %s, want %d", what, r.StatusCode, r.body, status)
		}
	}

	r := put("/filters/duotone", manifestOf("transformation", "1"), []byte("one"))
	want("first push", r, http.StatusCreated)
	v1 := deployed(r)
	if !v1.Enabled || len(v1.Versions) != 1 || v1.Version != v1.Versions[0].Version || r.Header.Get("Location") != "/filters/duotone" {
		t.Fatalf("first push: %+v", v1)
	}
	if ok, _ := e.blobs.Exists(context.Background(), storage.FilterBlobKey(v1.Version)); !ok {
		t.Fatal("the bundle is not in the blob store")
	}
	want("the same push again", put("/filters/duotone", manifestOf("transformation", "1"), []byte("one")), http.StatusOK)

	// multipart/form-data, as the admin UI sends it.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for field, data := range map[string][]byte{"manifest": manifestOf("transformation", "2"), "module": []byte("two")} {
		w, _ := mw.CreateFormFile(field, field)
		_, _ = w.Write(data)
	}
	_ = mw.Close()
	r = e.signed(http.MethodPut, "/filters/duotone", adminKey, adminPriv, body.Bytes(), "Content-Type", mw.FormDataContentType())
	want("multipart push", r, http.StatusCreated)
	v2 := deployed(r)
	if v2.Previous != v1.Version || len(v2.Versions) != 2 {
		t.Fatalf("second push: %+v", v2)
	}

	t.Run("refusals", func(t *testing.T) {
		r := put("/filters/duotone", manifestOf("transformation", "3"), []byte("broken"))
		want("a module that does not compile", r, http.StatusBadRequest)
		if msg := r.errMessage(t); !strings.Contains(msg, "filter.wasm") {
			t.Fatalf("refusal says %q", msg)
		}
		r = e.signed(http.MethodPut, "/filters/duotone", adminKey, adminPriv, []byte("not a tar"), "Content-Type", "application/x-tar")
		want("not a tar", r, http.StatusBadRequest)
		var tarOnlyManifest bytes.Buffer
		tarOnlyManifest.Write(api.FilterBundleTar(manifestOf("transformation", "4"), nil)[:1024]) // header + manifest block
		r = e.signed(http.MethodPut, "/filters/duotone", adminKey, adminPriv, tarOnlyManifest.Bytes(), "Content-Type", "application/x-tar")
		want("a tar without filter.wasm", r, http.StatusBadRequest)
		vs, err := e.db.FilterVersions(context.Background(), "duotone")
		if err != nil || len(vs) != 2 {
			t.Fatalf("versions after refusals: %d %v, want 2", len(vs), err)
		}
		r = e.signed(http.MethodPut, "/filters/duotone", userKey, userPriv, api.FilterBundleTar(manifestOf("transformation", "5"), []byte("five")))
		if r.StatusCode != http.StatusBadRequest && r.StatusCode != http.StatusForbidden {
			t.Fatalf("a key without filters.put: %d", r.StatusCode)
		}
	})

	t.Run("activate=false", func(t *testing.T) {
		r := put("/filters/duotone?activate=false", manifestOf("transformation", "3"), []byte("three"))
		want("push without activating", r, http.StatusCreated)
		if d := deployed(r); d.Version != v2.Version || len(d.Versions) != 3 {
			t.Fatalf("push without activating changed the active version: %+v", d)
		}
	})

	t.Run("canary", func(t *testing.T) {
		want("percent without canary", e.admin(http.MethodPatch, "/filters/duotone", `{"percent":50}`), http.StatusBadRequest)
		want("unknown canary", e.admin(http.MethodPatch, "/filters/duotone", `{"canary":"0000000","percent":50}`), http.StatusBadRequest)
		want("percent 101", e.admin(http.MethodPatch, "/filters/duotone", `{"canary":"`+v1.Version+`","percent":101}`), http.StatusBadRequest)
		want("the active version as canary", e.admin(http.MethodPatch, "/filters/duotone", `{"canary":"`+v2.Version+`","percent":5}`), http.StatusBadRequest)
		r := e.admin(http.MethodPatch, "/filters/duotone", `{"canary":"`+v1.Version[:9]+`","percent":50}`)
		want("canary by prefix", r, http.StatusOK)
		if d := deployed(r); d.Canary != v1.Version || d.Percent != 50 || d.Version != v2.Version {
			t.Fatalf("canary: %+v", d)
		}
		r = e.admin(http.MethodPatch, "/filters/duotone", `{"canary":""}`)
		if d := deployed(r); d.Canary != "" || d.Percent != 0 {
			t.Fatalf("canary ended: %+v", d)
		}
		want("disable", e.admin(http.MethodPatch, "/filters/duotone", `{"enabled":false}`), http.StatusOK)
		r = e.admin(http.MethodPatch, "/filters/duotone", `{"enabled":true}`)
		if d := deployed(r); !d.Enabled {
			t.Fatalf("enable: %+v", d)
		}
		want("a listener", put("/filters/guard", []byte(`{"name":"guard","kind":"listener"}`), []byte("g")), http.StatusCreated)
		want("push the listener again", put("/filters/guard", []byte(`{"name":"guard","kind":"listener","v":2}`), []byte("g")), http.StatusCreated)
		vs, _ := e.db.FilterVersions(context.Background(), "guard")
		want("a listener's canary", e.admin(http.MethodPatch, "/filters/guard", `{"canary":"`+vs[1].Version+`","percent":10}`), http.StatusBadRequest)
	})

	t.Run("rollback", func(t *testing.T) {
		r := e.admin(http.MethodPost, "/filters/duotone/rollback", "")
		want("rollback to the previous", r, http.StatusOK)
		if d := deployed(r); d.Version != v1.Version || d.Previous != v2.Version {
			t.Fatalf("rollback: %+v", d)
		}
		r = e.admin(http.MethodPost, "/filters/duotone/rollback", `{"version":"`+v2.Version[:7]+`"}`)
		if d := deployed(r); d.Version != v2.Version {
			t.Fatalf("rollback by prefix: %+v", d)
		}
		want("rollback to an unknown version", e.admin(http.MethodPost, "/filters/duotone/rollback", `{"version":"abcdef0"}`), http.StatusBadRequest)
		want("rollback of an undeployed filter", e.admin(http.MethodPost, "/filters/nothing/rollback", ""), http.StatusNotFound)
	})

	t.Run("delete", func(t *testing.T) {
		want("delete", e.admin(http.MethodDelete, "/filters/duotone", ""), http.StatusOK)
		want("delete again", e.admin(http.MethodDelete, "/filters/duotone", ""), http.StatusNotFound)
		want("patch a deleted filter", e.admin(http.MethodPatch, "/filters/duotone", `{"enabled":true}`), http.StatusNotFound)
		r := e.get(e.tokenURL("/filters?publicKey=admin", adminPriv))
		var list api.FilterList
		_ = json.Unmarshal(r.body, &list)
		if len(list.Deployed) != 1 || list.Deployed[0].Name != "guard" {
			t.Fatalf("GET /filters deployed: %+v", list.Deployed)
		}
	})

	t.Run("audit", func(t *testing.T) {
		entries, n, err := e.db.AuditLog(context.Background(), storage.AuditQuery{Action: "filters.", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, a := range entries {
			count[a.Action]++
			if a.Actor != adminKey {
				t.Errorf("%s by %q", a.Action, a.Actor)
			}
		}
		if count["filters.put"] != 5 || count["filters.patch"] != 4 || count["filters.rollback"] != 2 || count["filters.delete"] != 1 {
			t.Fatalf("audit (%d): %v", n, count)
		}
		if got := host.syncs.Load(); got != int32(n) {
			t.Fatalf("the instance was told to sync %d times for %d changes", got, n)
		}
	})

	t.Run("rollback of a deleted filter", func(t *testing.T) {
		vs, err := e.db.FilterVersions(context.Background(), "duotone")
		if err != nil || len(vs) < 2 {
			t.Fatalf("versions %+v (%v)", vs, err)
		}
		r := e.admin(http.MethodPost, "/filters/duotone/rollback", "")
		want("rollback of a deleted filter", r, http.StatusOK)
		if d := deployed(r); d.Version != vs[0].Version || !d.Enabled {
			t.Fatalf("rollback of a deleted filter: %+v, want its newest version %s, enabled", d, vs[0].Version)
		}
		want("delete it again", e.admin(http.MethodDelete, "/filters/duotone", ""), http.StatusOK)
		r = e.admin(http.MethodPost, "/filters/duotone/rollback", `{"version":"`+vs[1].Version[:7]+`"}`)
		want("rollback of a deleted filter to a version", r, http.StatusOK)
		if d := deployed(r); d.Version != vs[1].Version {
			t.Fatalf("rollback of a deleted filter by prefix: %+v", d)
		}
	})
}

func TestFilterDeployWithoutHost(t *testing.T) {
	e := newEnv(t, testConfig())
	r := e.signed(http.MethodPut, "/filters/duotone", adminKey, adminPriv, api.FilterBundleTar(manifestOf("transformation", "1"), []byte("x")))
	if r.StatusCode != http.StatusNotImplemented {
		t.Fatalf("PUT without a filters host: %d %s", r.StatusCode, r.body)
	}
}

// TestReadFilterBundle reads the tar vitrine filter push sends, the same
// gzip-compressed and with its files in a folder, and refuses one that
// lacks a file or holds one twice.
func TestReadFilterBundle(t *testing.T) {
	folder := func(entries ...[2]string) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, e := range entries {
			_ = tw.WriteHeader(&tar.Header{Name: e[0], Mode: 0o644, Size: int64(len(e[1])), Typeflag: tar.TypeReg})
			_, _ = tw.Write([]byte(e[1]))
		}
		_ = tw.Close()
		return b.Bytes()
	}
	gz := func(b []byte) []byte {
		var out bytes.Buffer
		zw := gzip.NewWriter(&out)
		_, _ = zw.Write(b)
		_ = zw.Close()
		return out.Bytes()
	}
	lim := api.DefaultBundleLimits(1 << 20)
	good := [][]byte{
		api.FilterBundleTar([]byte("{}"), []byte("wasm")),
		gz(api.FilterBundleTar([]byte("{}"), []byte("wasm"))),
		folder([2]string{"duotone/README.md", "x"}, [2]string{"duotone/filter.json", "{}"}, [2]string{"duotone/filter.wasm", "wasm"}),
	}
	for i, b := range good {
		m, w, err := api.ReadFilterBundle(bytes.NewReader(b), lim)
		if err != nil || string(m) != "{}" || string(w) != "wasm" {
			t.Errorf("bundle %d: %q %q %v", i, m, w, err)
		}
	}
	bad := map[string][]byte{
		"no module":      folder([2]string{"filter.json", "{}"}),
		"no manifest":    folder([2]string{"filter.wasm", "w"}),
		"module twice":   folder([2]string{"filter.json", "{}"}, [2]string{"filter.wasm", "w"}, [2]string{"x/filter.wasm", "w"}),
		"empty":          folder(),
		"not a tar":      []byte("hello"),
		"truncated gzip": gz(api.FilterBundleTar([]byte("{}"), []byte("wasm")))[:20],
	}
	for name, b := range bad {
		if _, _, err := api.ReadFilterBundle(bytes.NewReader(b), lim); err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
	if !bytes.Equal(api.FilterBundleTar([]byte("{}"), []byte("w")), api.FilterBundleTar([]byte("{}"), []byte("w"))) {
		t.Error("the same files made two different tars")
	}
}

// gzipBomb is a gzip of a tar whose one entry, name, is size zero
// bytes: about a thousandth of that compressed.
func gzipBomb(t *testing.T, name string, size int64) []byte {
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for n := int64(0); n < size; n += int64(len(zeros)) {
		if _, err := tw.Write(zeros[:min(int64(len(zeros)), size-n)]); err != nil {
			t.Fatal(err)
		}
	}
	_ = tw.Close()
	_ = zw.Close()
	return out.Bytes()
}

// TestFilterBundleBombs: a gzip that unpacks to a GiB is refused having
// allocated a few MiB, whether the GiB is filter.wasm (its declared size
// is over the module limit) or a file the bundle would skip (the total
// unpacked passes its bound); and PUT /filters answers 400 naming why.
func TestFilterBundleBombs(t *testing.T) {
	lim := api.DefaultBundleLimits(1 << 20)
	for _, c := range []struct{ name, entry, want string }{
		{"module", "filter.wasm", "filter.wasm is 1073741824 bytes, over filters.maxModuleBytes of 1048576 bytes"},
		{"skipped file", "padding.bin", "it unpacks to more than 3145728 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bomb := gzipBomb(t, c.entry, 1<<30)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, _, err := api.ReadFilterBundle(bytes.NewReader(bomb), lim)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%d-byte bomb: %v, want %q", len(bomb), err, c.want)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 50<<20 {
				t.Fatalf("reading the %d-byte bomb allocated %d bytes", len(bomb), grew)
			}
		})
	}
	e := newEnvWith(t, testConfig(), func(d *api.Deps) { d.Filters = &standInHost{} })
	r := e.signed(http.MethodPut, "/filters/duotone", adminKey, adminPriv, gzipBomb(t, "filter.wasm", 1<<30),
		"Content-Type", "application/gzip")
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(r.errMessage(t), "over filters.maxModuleBytes") {
		t.Fatalf("PUT of a bomb: %d %s", r.StatusCode, r.body)
	}
}
