package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
)

// openFilters starts loading the filters of filters.dir in the
// background, compiled modules cached under the data directory: the server
// listens meanwhile. The default folder, <data>/filters, is created; a
// folder set in the configuration is not, so that a mistyped path fails
// the load instead of loading nothing. Native transformation and preset
// names are reserved.
func openFilters(ctx context.Context, cfg *fileConfig, dataDir string, eng *engine.Engine, obs filters.Observer, log *slog.Logger) (*filters.Host, error) {
	fc := cfg.Filters
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	if fc.Dir == defaultFiltersDir(abs) {
		if err := os.MkdirAll(fc.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("filters: %w", err)
		}
	}
	log.Info("filters folder", "dir", fc.Dir, "reload", "POST /filters/reload or SIGHUP")
	fc.CacheDir = filepath.Join(abs, "wasm-cache")
	ec := eng.Config()
	fc.MaxWidth, fc.MaxHeight, fc.MaxPixels = ec.MaxWidth, ec.MaxHeight, ec.MaxPixels
	fc.Reserved = eng.Registry().Names()
	for name := range ec.Presets {
		fc.Reserved = append(fc.Reserved, name)
	}
	fc.Logger = log
	fc.Observer = obs
	return filters.Start(ctx, fc)
}

// wireFilters hands the filters to the engine (transformations) and the
// api (listeners, stats_add counters in GET /stats).
func wireFilters(fh *filters.Host, sync *filterSync, eng *engine.Engine, srv *api.Server) {
	eng.Registry().SetGuests(guestSource{fh, sync})
	srv.Bus.AddSource(filterListeners{fh})
	srv.Bus.On("stats.get", 0, statsCounters(fh))
}

// reloadOnHUP reloads the filters on every SIGHUP until ctx ends.
func reloadOnHUP(ctx context.Context, fh *filters.Host, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := fh.StartReload(); err != nil {
				log.Error("filter reload", "err", err)
			}
		}
	}
}

// statsCounters is the stats.get listener that shows every filter's
// stats_add counters under custom.<filter>. The filter's stats_set values
// share that object (api.Event.SetStat); whichever runs first, a value
// replaces the counter of its name in that response.
func statsCounters(fh *filters.Host) api.Listener {
	return func(ctx context.Context, ev *api.Event) error {
		for name, counters := range fh.Current().Counters() {
			ns, ok := ev.Stats[name].(map[string]any)
			if !ok {
				ns = make(map[string]any, len(counters))
				ev.Stats[name] = ns
			}
			for k, v := range counters {
				if _, set := ns[k]; !set {
					ns[k] = v
				}
			}
		}
		return nil
	}
}

// guestSource gives the engine the transformation filters of the current
// set, and those still loading as guests that answer 503. A filter with a
// canary loaded is a canaryGuest.
type guestSource struct {
	h    *filters.Host
	sync *filterSync // nil: no canaries
}

func (g guestSource) Guest(name string) (engine.Guest, bool) {
	set := g.h.Current()
	if t, ok := set.Transformation(name); ok {
		if g.sync != nil {
			if p := g.sync.percent(name); p > 0 {
				if c, ok := set.Transformation(filters.CanaryKey(name)); ok {
					return canaryGuest{guest: guest{t}, canary: guest{c}, percent: p}, true
				}
			}
		}
		return guest{t}, true
	}
	if p, ok := set.Pending(name); ok && p.Manifest().Kind == filters.KindTransformation {
		return loadingGuest{p}, true
	}
	return nil, false
}

func (g guestSource) GuestNames() []string { return g.h.Current().TransformationNames() }

// guest is a transformation filter described from its manifest, whose
// parameters are the one schema native transformations are described with
// (schema.Param): a guest's int default is a number, as a native one's.
type guest struct{ filters.Transformation }

func (g guest) Describe() engine.Description {
	m := g.Manifest()
	d := engine.Description{Name: m.Name, Kind: "wasm", Description: m.Description, Params: []engine.ParamDesc{}}
	for _, name := range m.ParamNames() {
		d.Params = append(d.Params, engine.ParamDesc(m.Params[name].Param))
	}
	return d
}

// canaryGuest is a transformation filter with a canary version served for
// percent percent of images, chosen per image (canaryBucket).
type canaryGuest struct {
	guest
	canary  guest
	percent int
}

// For returns the version that serves the image subject names.
func (c canaryGuest) For(subject string) engine.Guest {
	if canaryBucket(subject) < c.percent {
		return c.canary
	}
	return c.guest
}

// loadingGuest is a transformation filter still loading: its step fails
// with 503 when the chain is parsed, before any pixel is decoded.
type loadingGuest struct{ p filters.Pending }

func (g loadingGuest) CheckParams(map[string]string) (map[string]string, error) {
	return nil, g.p.Err()
}
func (g loadingGuest) ContentHash() string { return "" }
func (g loadingGuest) TransformTo(context.Context, *image.NRGBA, map[string]string, map[string]any, func(*image.NRGBA) error) error {
	return g.p.Err()
}

// filterListeners gives the api's bus the listener filters of the current
// set, asked on every event; a fatal listener still loading fails its
// events with 503.
type filterListeners struct{ h *filters.Host }

func (f filterListeners) Subscriptions() []api.Subscription {
	set := f.h.Current()
	ls, pending := set.Listeners(), set.PendingListeners()
	out := make([]api.Subscription, 0, len(ls)+len(pending))
	for _, l := range ls {
		out = append(out, api.Subscription{Patterns: l.Events(), Priority: l.Priority(),
			Listener: func(ctx context.Context, ev *api.Event) error { return l.Handle(ctx, ev) }})
	}
	for _, p := range pending {
		m := p.Manifest()
		out = append(out, api.Subscription{Patterns: m.Events, Priority: m.Priority,
			Listener: func(context.Context, *api.Event) error { return p.Err() }})
	}
	return out
}

// filterAdmin serves GET /filters and POST /filters/reload, and checks the
// filters deployed through the API (api.FilterDeployer).
type filterAdmin struct {
	h    *filters.Host
	sync *filterSync
	// wait bounds how long POST /filters/reload waits for the filters it
	// loads: filters.compileTimeout.
	wait time.Duration
	// maxModule is filters.maxModuleBytes.
	maxModule int64
}

func (a filterAdmin) Filters() []api.FilterStatus { return filterStatuses(a.h.Current().Status()) }

func (a filterAdmin) ReloadFilters(ctx context.Context) ([]api.FilterStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, a.wait)
	defer cancel()
	set, err := a.h.Reload(ctx)
	return filterStatuses(set.Status()), err
}

// CheckFilter compiles and starts the bundle as a reload would, then drops
// it.
func (a filterAdmin) CheckFilter(ctx context.Context, name string, manifest, wasm []byte) (string, string, error) {
	version := filters.BundleVersion(manifest, wasm)
	m, err := a.h.Check(ctx, filters.Bundle{Name: name, Version: version, Manifest: manifest, Wasm: wasm})
	if err != nil {
		return "", "", err
	}
	return version, m.Kind, nil
}

// MaxModuleBytes is filters.maxModuleBytes.
func (a filterAdmin) MaxModuleBytes() int64 { return a.maxModule }

// SyncFilters wakes the sync worker.
func (a filterAdmin) SyncFilters() {
	if a.sync != nil && a.sync.wake != nil {
		a.sync.wake.Wake()
	}
}

var _ api.FilterDeployer = filterAdmin{}

// filterStatuses is the filters' own status in the api's terms.
func filterStatuses(list []filters.Status) []api.FilterStatus {
	out := make([]api.FilterStatus, len(list))
	for i, f := range list {
		out[i] = api.FilterStatus{Name: f.Name, Source: f.Source, Version: f.Version, State: f.State, Loaded: f.Loaded, ContentHash: f.ContentHash,
			Error: f.Error, Counters: f.Counters}
		if f.Manifest != nil {
			out[i].Manifest, _ = json.Marshal(f.Manifest) // a parsed manifest always marshals
		}
		// Why a conversion: api.FilterStats has filters.Stats' fields, so a
		// field added to one and not the other stops the build here.
		out[i].Stats = (*api.FilterStats)(f.Stats)
	}
	return out
}
