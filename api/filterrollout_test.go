package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/storage"
)

// TestFilterRollout: a push answers with where its version runs, per
// instance that reported lately (ready, loading, unavailable with the
// reason, failed), waits at most the deployer's RolloutWait for the ones
// still loading, and GET /filters says the same; the new version's blob
// reservation is claimed by its row, so nothing of it is collected.
func TestFilterRollout(t *testing.T) {
	host := &standInHost{wait: 300 * time.Millisecond}
	e := newEnvWith(t, testConfig(), func(d *api.Deps) { d.Filters = host })
	ctx := context.Background()
	manifest, wasm := manifestOf("transformation", "1"), []byte("one")
	sum := sha256.Sum256(append(append([]byte{}, manifest...), wasm...))
	version := hex.EncodeToString(sum[:])
	report := func(instance, state, reason string) {
		t.Helper()
		data, _ := json.Marshal([]api.FilterRunning{{Name: "duotone", Source: "api", Target: version, State: state, Error: reason}})
		if err := e.db.ReportFilterInstance(ctx, instance, data); err != nil {
			t.Fatal(err)
		}
	}
	report("a", "ready", "")
	report("b", "loading", "")
	report("c", "unavailable", `filter duotone: asks for capability "clock", which filters.allow does not grant`)
	if err := e.db.ReportFilterInstance(ctx, "d", json.RawMessage(`[]`)); err != nil {
		t.Fatal(err)
	}

	r := e.signed(http.MethodPut, "/filters/duotone", adminKey, adminPriv, api.FilterBundleTar(manifest, wasm),
		"Content-Type", "application/x-tar")
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("push: %d %s", r.StatusCode, r.body)
	}
	var d api.DeployedFilter
	if err := json.Unmarshal(r.body, &d); err != nil || d.Version != version || d.Rollout == nil {
		t.Fatalf("push answered %s (%v), want version %s with its rollout", r.body, err, version)
	}
	want := map[string]string{"a": "ready", "b": "loading", "c": "unavailable", "d": "loading"}
	if d.Rollout.State != api.RolloutLoading || len(d.Rollout.Instances) != len(want) {
		t.Fatalf("rollout %+v, want loading on 4 instances", d.Rollout)
	}
	for _, in := range d.Rollout.Instances {
		if in.State != want[in.Instance] {
			t.Errorf("%s: %+v, want %s", in.Instance, in, want[in.Instance])
		}
		if in.State == "unavailable" && in.Error == "" {
			t.Errorf("%s is unavailable with no reason", in.Instance)
		}
	}
	if q, err := e.db.Queued(ctx, []string{storage.FilterBlobKey(version)}); err != nil || q[storage.FilterBlobKey(version)] {
		t.Fatalf("the recorded version's blob is still queued for deletion (%v)", err)
	}
	e.drain()
	if ok, _ := e.blobs.Exists(ctx, storage.FilterBlobKey(version)); !ok {
		t.Fatal("the recorded version's bundle was collected")
	}

	// b and d load it: the rollout is partial, c cannot run it.
	report("b", "ready", "")
	report("d", "ready", "")
	var list api.FilterList
	if err := json.Unmarshal(e.get(e.tokenURL("/filters?publicKey=admin", adminPriv)).body, &list); err != nil || len(list.Deployed) != 1 {
		t.Fatalf("GET /filters: %+v %v", list, err)
	}
	if ro := list.Deployed[0].Rollout; ro == nil || ro.State != api.RolloutPartial {
		t.Fatalf("GET /filters rollout %+v, want partial", ro)
	}
	report("c", "ready", "")
	r = e.admin(http.MethodPost, "/filters/duotone/rollback", `{"version":"`+version+`"}`)
	if err := json.Unmarshal(r.body, &d); err != nil || d.Rollout == nil || d.Rollout.State != api.RolloutActive {
		t.Fatalf("rollback answered %s, want the rollout active", r.body)
	}
}
