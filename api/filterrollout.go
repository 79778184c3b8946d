package api

import (
	"context"
	"encoding/json"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// A push or rollback answers once it knows where the version runs (filters/README.md,
// Filters through the API): every instance that reported in the last
// minute reports, as it syncs, the version of each filter's current files
// and its state there; the change waits until none is still loading, at
// most DeployLimits.RolloutWait, and says per instance whether the version
// is ready, loading, unavailable (a capability that instance does not
// grant, and which one) or failed.

// rolloutPoll is how often a waiting change reads the instances' reports.
const rolloutPoll = 200 * time.Millisecond

// awaitRollout waits until the active version of name is loaded or given
// up on every instance that reported lately, for at most wait and not past
// ctx's deadline (less a second to answer in).
func (s *Server) awaitRollout(ctx context.Context, name string, wait time.Duration) {
	deadline := time.Now().Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Add(-time.Second).Before(deadline) {
		deadline = d.Add(-time.Second)
	}
	t := time.NewTicker(rolloutPoll)
	defer t.Stop()
	for time.Now().Before(deadline) {
		r, err := s.rolloutOf(ctx, name)
		if err != nil || r == nil || r.State != RolloutLoading {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// rolloutOf is where the active version of name runs now; nil when it is
// not deployed or disabled.
func (s *Server) rolloutOf(ctx context.Context, name string) (*FilterRollout, error) {
	set, err := s.deploys.FilterSet(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.deploys.FilterInstances(ctx, s.now().Add(-instanceWindow))
	if err != nil {
		return nil, err
	}
	d, ok := set.Filters[name]
	if !ok || !d.Enabled {
		return nil, nil
	}
	return rollout(name, d.Version, rows), nil
}

// rollout is where version of name runs, from the instances' reports.
func rollout(name, version string, rows []storage.FilterInstance) *FilterRollout {
	r := &FilterRollout{State: RolloutActive, Instances: []FilterOnInstance{}}
	for _, row := range rows {
		var running []FilterRunning
		_ = json.Unmarshal(row.Loaded, &running) // an instance reports what it marshalled from FilterRunning
		on := FilterOnInstance{Instance: row.Instance, State: "loading", Error: "has not loaded this version yet"}
		for _, f := range running {
			if f.Name != name || f.Source != "api" || (f.Target != version && (f.Target != "" || f.Version != version)) {
				continue
			}
			on = FilterOnInstance{Instance: row.Instance, State: f.State, Error: f.Error}
			if f.State == "ready" || f.State == "loading" {
				on.Error = ""
			}
		}
		switch {
		case on.State == "loading":
			r.State = RolloutLoading
		case on.State != "ready" && r.State == RolloutActive:
			r.State = RolloutPartial
		}
		r.Instances = append(r.Instances, on)
	}
	return r
}
