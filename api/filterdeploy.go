package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// Filters deployed through the API (filters/README.md, Filters through the API): a
// version is checked by compiling it as a reload would, stored in the blob
// store under its SHA-256, recorded, and made active in the one row every
// instance polls; each change is audited and goes out as an event.

// FilterDeployer is the optional ability of a FilterAdmin to take filters
// through the API; package main (filters.go) has it.
type FilterDeployer interface {
	// CheckFilter compiles and starts the bundle exactly as a reload
	// would, then drops it. It returns the bundle's version and the
	// manifest's kind; the error of a refused bundle answers 400 and says
	// why.
	CheckFilter(ctx context.Context, name string, manifest, wasm []byte) (version, kind string, err error)
	// SyncFilters tells this instance to load the active set now rather
	// than at its next poll.
	SyncFilters()
	// DeployLimits are the bounds of a deployment.
	DeployLimits() DeployLimits
}

// DeployLimits are the bounds of a deployment through the API.
type DeployLimits struct {
	// MaxModuleBytes is the largest filter.wasm an instance loads
	// (filters.maxModuleBytes): a bundle is unpacked within it.
	MaxModuleBytes int64
	// RolloutWait is how long a push or rollback waits for every instance
	// to load the version (filters.syncInterval plus
	// filters.compileTimeout); 0 answers at once.
	RolloutWait time.Duration
}

// filterDeployStore keeps the versions, the active set and the instances'
// reports (storage.DB).
type filterDeployStore interface {
	RecordFilterVersion(ctx context.Context, v *storage.FilterVersion, res storage.Reservation) error
	FilterVersions(ctx context.Context, name string) ([]storage.FilterVersion, error)
	FilterSet(ctx context.Context) (storage.FilterSet, error)
	ChangeFilterSet(ctx context.Context, action, name string, detail map[string]any,
		change func(map[string]storage.FilterDeployment) error) (storage.FilterSet, error)
	FilterInstances(ctx context.Context, since time.Time) ([]storage.FilterInstance, error)
}

var _ filterDeployStore = (*storage.DB)(nil)

// instanceWindow is how recent an instance's report must be for GET
// /filters to list it.
const instanceWindow = time.Minute

// deployer returns the FilterDeployer, or 501 when this server has none.
func (s *Server) deployer() (FilterDeployer, error) {
	if d, ok := s.filters.(FilterDeployer); ok && s.deploys != nil {
		return d, nil
	}
	return nil, errorf(http.StatusNotImplemented, "Filters cannot be deployed through this server")
}

// putFilter serves PUT /filters/<name>: the bundle is checked (a version
// that does not compile answers 400 and is stored nowhere), stored, and,
// unless ?activate=false, becomes the active version (its canary cleared).
// 201 for a version not seen before, 200 otherwise.
func (s *Server) putFilter(c *call) error {
	d, err := s.deployer()
	if err != nil {
		return err
	}
	name := c.params["filter"]
	activate := true
	switch c.query.Get("activate") {
	case "", "true", "1":
	case "false", "0":
		activate = false
	default:
		return errorf(http.StatusBadRequest, "activate: want true or false")
	}
	manifest, wasm, err := c.readFilterBody(DefaultBundleLimits(d.DeployLimits().MaxModuleBytes))
	if err != nil {
		return err
	}
	// Why without cancel: a client that goes away must not leave a
	// version half-recorded; the checked compile bounds the time.
	ctx := context.WithoutCancel(c.ctx())
	version, kind, err := d.CheckFilter(ctx, name, manifest, wasm)
	if err != nil {
		return err
	}
	if !json.Valid(manifest) {
		return errorf(http.StatusBadRequest, "filter.json is not JSON")
	}
	created, err := s.storeFilterVersion(ctx, name, version, manifest, wasm)
	if err != nil {
		return err
	}
	if activate {
		err = s.changeFilterSet(ctx, d, "filters.put", name, map[string]any{"version": version, "kind": kind},
			func(set map[string]storage.FilterDeployment) error {
				dep, ok := set[name]
				if !ok {
					dep.Enabled = true
				}
				set[name] = activated(dep, version)
				return nil
			})
		if err != nil {
			return err
		}
	}
	return s.writeDeployed(c, name, created, activate)
}

// storeFilterVersion stores the bundle, once every check passed, and
// records the version; created says it was not recorded before.
// Write-then-commit: the blob is durable before the row names it; the blob
// of a new version is reserved first, and the reservation is claimed by
// the row's transaction, so a push that fails or times out between the two
// leaves no blob behind (the blob queue collects it). A known version's
// blob is written again unreserved (its row names it): a push repairs a
// bundle fsck found missing.
func (s *Server) storeFilterVersion(ctx context.Context, name, version string, manifest, wasm []byte) (bool, error) {
	known, err := s.deploys.FilterVersions(ctx, name)
	if err != nil {
		return false, err
	}
	created := !slices.ContainsFunc(known, func(v storage.FilterVersion) bool { return v.Version == version })
	key := storage.FilterBlobKey(version)
	var res storage.Reservation
	if created {
		if res, err = s.images.Reserve(ctx, key); err != nil {
			return false, err
		}
	}
	if err := s.blobs.Put(ctx, key, FilterBundleTar(manifest, wasm)); err != nil {
		s.release(ctx, res)
		return false, err
	}
	v := &storage.FilterVersion{Name: name, Version: version, Manifest: manifest, Size: int64(len(manifest) + len(wasm))}
	if err := s.deploys.RecordFilterVersion(ctx, v, res); err != nil {
		s.release(ctx, res)
		return false, err
	}
	return created, nil
}

// changeFilterSet changes the active set (storage's ChangeFilterSet, with
// its audit entry and event) and has this instance load the result at
// once rather than at its next poll.
func (s *Server) changeFilterSet(ctx context.Context, d FilterDeployer, action, name string, detail map[string]any,
	change func(map[string]storage.FilterDeployment) error) error {
	if _, err := s.deploys.ChangeFilterSet(ctx, action, name, detail, change); err != nil {
		return err
	}
	d.SyncFilters()
	return nil
}

// activated is dep serving version, the version it served kept as the one
// a rollback goes back to, and its canary ended.
func activated(dep storage.FilterDeployment, version string) storage.FilterDeployment {
	if dep.Version != version {
		dep.Previous, dep.Version = dep.Version, version
	}
	dep.Canary, dep.Percent = "", 0
	return dep
}

// filterPatch is the body of PATCH /filters/<name>.
type filterPatch struct {
	Enabled *bool   `json:"enabled"`
	Canary  *string `json:"canary"`
	Percent *int    `json:"percent"`
}

// patchFilter serves PATCH /filters/<name>: enabled switches the filter on
// or off everywhere; canary names a version (or a prefix of one) served
// for percent percent of images, "" ends the canary.
func (s *Server) patchFilter(c *call) error {
	d, err := s.deployer()
	if err != nil {
		return err
	}
	name := c.params["filter"]
	var b filterPatch
	if err := c.readJSON(64<<10, &b); err != nil {
		return err
	}
	if b.Enabled == nil && b.Canary == nil && b.Percent == nil {
		return errorf(http.StatusBadRequest, "Nothing to change: give enabled, canary or percent")
	}
	if b.Percent != nil && (*b.Percent < 0 || *b.Percent > 100) {
		return errorf(http.StatusBadRequest, "percent: want 0 to 100, got %d", *b.Percent)
	}
	ctx := context.WithoutCancel(c.ctx())
	versions, err := s.deploys.FilterVersions(ctx, name)
	if err != nil {
		return err
	}
	canary := ""
	if b.Canary != nil && *b.Canary != "" {
		v, err := resolveVersion(name, versions, *b.Canary)
		if err != nil {
			return err
		}
		if k := manifestKind(v.Manifest); k != "transformation" {
			return errorf(http.StatusBadRequest, "Filter %s is a %s: a canary is for transformations", name, k)
		}
		canary = v.Version
	}
	detail := map[string]any{}
	err = s.changeFilterSet(ctx, d, "filters.patch", name, detail, func(set map[string]storage.FilterDeployment) error {
		dep, ok := set[name]
		if !ok {
			return errorf(http.StatusNotFound, "Filter %s is not deployed", name)
		}
		if b.Enabled != nil {
			dep.Enabled = *b.Enabled
			detail["enabled"] = dep.Enabled
		}
		if b.Canary != nil {
			dep.Canary = canary
			detail["canary"] = canary
			if canary == "" {
				dep.Percent = 0
			}
		}
		if b.Percent != nil {
			dep.Percent = *b.Percent
			detail["percent"] = dep.Percent
		}
		if dep.Canary != "" && dep.Canary == dep.Version {
			return errorf(http.StatusBadRequest, "The canary %s is the active version", dep.Canary)
		}
		if dep.Canary == "" && dep.Percent != 0 {
			return errorf(http.StatusBadRequest, "percent needs a canary")
		}
		set[name] = dep
		return nil
	})
	if err != nil {
		return err
	}
	return s.writeDeployed(c, name, false, false)
}

// filterRollback is the body of POST /filters/<name>/rollback.
type filterRollback struct {
	Version string `json:"version"`
}

// rollbackFilter serves POST /filters/<name>/rollback: the named version
// (or a prefix of it), by default the previous one, becomes the active
// version again; its canary ends.
func (s *Server) rollbackFilter(c *call) error {
	d, err := s.deployer()
	if err != nil {
		return err
	}
	name := c.params["filter"]
	var b filterRollback
	if c.r.ContentLength != 0 {
		if err := c.readJSON(64<<10, &b); err != nil && !isMissingJSON(err) {
			return err
		}
	}
	ctx := context.WithoutCancel(c.ctx())
	versions, err := s.deploys.FilterVersions(ctx, name)
	if err != nil {
		return err
	}
	target := ""
	if b.Version != "" {
		v, err := resolveVersion(name, versions, b.Version)
		if err != nil {
			return err
		}
		target = v.Version
	}
	detail := map[string]any{}
	err = s.changeFilterSet(ctx, d, "filters.rollback", name, detail, func(set map[string]storage.FilterDeployment) error {
		dep, ok := set[name]
		to := target
		switch {
		case !ok && len(versions) == 0:
			return errorf(http.StatusNotFound, "Filter %s is not deployed and has no recorded version", name)
		case !ok:
			// A deleted filter keeps its versions: a rollback brings it
			// back, at the named version or else its newest.
			dep = storage.FilterDeployment{Enabled: true}
			if to == "" {
				to = versions[0].Version
			}
		case to == "":
			to = dep.Previous
		}
		if to == "" {
			return errorf(http.StatusBadRequest, "Filter %s has no previous version to roll back to: name one", name)
		}
		detail["from"], detail["version"] = dep.Version, to
		set[name] = activated(dep, to)
		return nil
	})
	if err != nil {
		return err
	}
	return s.writeDeployed(c, name, false, true)
}

// deleteFilter serves DELETE /filters/<name>: the filter leaves the active
// set and every instance drops it; its versions stay recorded, so a later
// PUT or rollback can bring one back.
func (s *Server) deleteFilter(c *call) error {
	d, err := s.deployer()
	if err != nil {
		return err
	}
	name := c.params["filter"]
	err = s.changeFilterSet(context.WithoutCancel(c.ctx()), d, "filters.delete", name, nil,
		func(set map[string]storage.FilterDeployment) error {
			if _, ok := set[name]; !ok {
				return errorf(http.StatusNotFound, "Filter %s is not deployed", name)
			}
			delete(set, name)
			return nil
		})
	if err != nil {
		return err
	}
	return c.writeJSON(map[string]any{"name": name, "deleted": true}, out{cache: cacheNone})
}

// writeDeployed answers with the filter's entry of the active set, once
// every instance has loaded its version or given up when await is set
// (awaitRollout).
func (s *Server) writeDeployed(c *call, name string, created, await bool) error {
	if d, err := s.deployer(); err == nil && await {
		s.awaitRollout(c.ctx(), name, d.DeployLimits().RolloutWait)
	}
	ctx := context.WithoutCancel(c.ctx())
	list, err := s.deployedFilters(ctx)
	if err != nil {
		return err
	}
	res := DeployedFilter{Name: name, Versions: []FilterVersion{}}
	for _, f := range list {
		if f.Name == name {
			res = f
		}
	}
	if len(res.Versions) == 0 {
		vs, err := s.deploys.FilterVersions(ctx, name)
		if err != nil {
			return err
		}
		res.Versions = versionsJSON(vs)
	}
	o := out{cache: cacheNone}
	if created {
		o.status = http.StatusCreated
		c.w.Header().Set("Location", "/filters/"+name)
	}
	return c.writeJSON(res, o)
}

// deployedFilters is the active set with each filter's versions, by name.
func (s *Server) deployedFilters(ctx context.Context) ([]DeployedFilter, error) {
	set, err := s.deploys.FilterSet(ctx)
	if err != nil {
		return nil, err
	}
	all, err := s.deploys.FilterVersions(ctx, "")
	if err != nil {
		return nil, err
	}
	byName := map[string][]storage.FilterVersion{}
	for _, v := range all {
		byName[v.Name] = append(byName[v.Name], v)
	}
	rows, err := s.deploys.FilterInstances(ctx, s.now().Add(-instanceWindow))
	if err != nil {
		return nil, err
	}
	out := []DeployedFilter{}
	for name, d := range set.Filters {
		df := DeployedFilter{Name: name, Version: d.Version, Previous: d.Previous, Enabled: d.Enabled,
			Canary: d.Canary, Percent: d.Percent, Versions: versionsJSON(byName[name])}
		if d.Enabled {
			df.Rollout = rollout(name, d.Version, rows)
		}
		out = append(out, df)
	}
	slices.SortFunc(out, func(a, b DeployedFilter) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// filterInstances lists the instances that reported lately.
func (s *Server) filterInstances(ctx context.Context) ([]FilterInstance, error) {
	rows, err := s.deploys.FilterInstances(ctx, s.now().Add(-instanceWindow))
	if err != nil {
		return nil, err
	}
	out := make([]FilterInstance, 0, len(rows))
	for _, r := range rows {
		fi := FilterInstance{Instance: r.Instance, Heartbeat: r.Heartbeat.Format(time.RFC3339Nano), Filters: []FilterRunning{}}
		_ = json.Unmarshal(r.Loaded, &fi.Filters) // an instance reports what it marshalled from FilterRunning
		out = append(out, fi)
	}
	return out, nil
}

func versionsJSON(vs []storage.FilterVersion) []FilterVersion {
	out := make([]FilterVersion, len(vs))
	for i, v := range vs {
		out[i] = FilterVersion{Version: v.Version, Size: v.Size, Created: v.Created.Format(time.RFC3339Nano),
			Actor: v.Actor, Manifest: v.Manifest}
	}
	return out
}

// resolveVersion finds the version of name that v names: in full, or by a
// prefix of at least 7 digits that only one version starts with.
func resolveVersion(name string, versions []storage.FilterVersion, v string) (storage.FilterVersion, error) {
	var found []storage.FilterVersion
	for _, cand := range versions {
		if cand.Version == v {
			return cand, nil
		}
		if len(v) >= 7 && strings.HasPrefix(cand.Version, v) {
			found = append(found, cand)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return storage.FilterVersion{}, errorf(http.StatusBadRequest, "Filter %s has no version %s", name, v)
	}
	return storage.FilterVersion{}, errorf(http.StatusBadRequest, "Version %s of filter %s is ambiguous: give more digits", v, name)
}

// manifestKind is the kind a stored manifest states.
func manifestKind(m json.RawMessage) string {
	var k struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(m, &k)
	return k.Kind
}

// isMissingJSON reports whether err is readJSON's refusal of an empty body.
func isMissingJSON(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Msg == "Missing JSON data"
}
