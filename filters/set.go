package filters

import (
	"maps"
	"sort"
)

// Set is one consistent generation of filters.
type Set struct {
	filters map[string]*Filter
	// failures maps folder names to the reason their current files were
	// refused (the old version, if any, is still in filters).
	failures map[string]string
	// loading maps folder names whose current files are loading to their
	// manifest (the old version, if any, is still in filters).
	loading map[string]*Manifest
	// failedManifests maps folder names in failures whose manifest was
	// read before they failed to that manifest.
	failedManifests map[string]*Manifest
	// origins maps every name in failures and loading to its source
	// (SourceDir or SourceAPI).
	origins map[string]string
	// targets maps a key deployed through the API to the version of its
	// current files: the one serving, loading, failed or unavailable.
	targets map[string]string
	// unavailable maps the names in failures that this instance's
	// configuration refuses (NotGrantedError) to that reason.
	unavailable map[string]string
	listeners   []Listener
	// pendingListeners are the fatal listeners with no version yet.
	pendingListeners []Pending
}

func emptySet() *Set {
	return &Set{filters: map[string]*Filter{}, failures: map[string]string{}, loading: map[string]*Manifest{},
		failedManifests: map[string]*Manifest{}, origins: map[string]string{}, targets: map[string]string{},
		unavailable: map[string]string{}}
}

// clone copies the maps of s; the index is built again by publish.
func (s *Set) clone() *Set {
	return &Set{filters: maps.Clone(s.filters), failures: maps.Clone(s.failures), loading: maps.Clone(s.loading),
		failedManifests: maps.Clone(s.failedManifests), origins: maps.Clone(s.origins), targets: maps.Clone(s.targets),
		unavailable: maps.Clone(s.unavailable)}
}

// index builds the listener lists, highest priority first, then by name.
func (s *Set) index() {
	for key, f := range s.filters {
		if f.manifest.Kind == KindListener && !IsCanaryKey(key) {
			s.listeners = append(s.listeners, Listener{f})
		}
	}
	sort.Slice(s.listeners, func(i, j int) bool {
		a, b := s.listeners[i], s.listeners[j]
		if a.Priority() != b.Priority() {
			return a.Priority() > b.Priority()
		}
		return a.Name() < b.Name()
	})
	for _, p := range append(s.pending(), s.cannotRun()...) {
		if p.manifest.Kind == KindListener && p.manifest.IsFatal() && !IsCanaryKey(p.key) {
			s.pendingListeners = append(s.pendingListeners, p)
		}
	}
	sort.Slice(s.pendingListeners, func(i, j int) bool {
		a, b := s.pendingListeners[i].manifest, s.pendingListeners[j].manifest
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		return a.Name < b.Name
	})
}

// pending lists the folders loading with no version serving.
func (s *Set) pending() []Pending {
	var out []Pending
	for name, m := range s.loading {
		if _, ok := s.filters[name]; !ok {
			out = append(out, Pending{manifest: m, key: name})
		}
	}
	return out
}

// cannotRun lists the filters deployed through the API that failed or are
// unavailable here with no version serving, each as a Pending whose Err
// says why (KindUnavailable).
func (s *Set) cannotRun() []Pending {
	var out []Pending
	for name := range s.failures {
		if p, ok := s.Unavailable(name); ok {
			out = append(out, p)
		}
	}
	return out
}

// Unavailable returns the filter named name when it was deployed through
// the API and this instance cannot run it, with no version serving: its
// current files ask for a capability filters.allow does not grant here,
// or failed to load here. Its Err is a KindUnavailable error (503, with
// Retry-After) saying which: another instance may serve it, so a request
// for it is worth retrying, and the instance stays ready (Unready).
func (s *Set) Unavailable(name string) (Pending, bool) {
	_, failed := s.failures[name]
	_, serving := s.filters[name]
	m := s.failedManifests[name]
	if !failed || serving || s.origins[name] != SourceAPI || m == nil {
		return Pending{}, false
	}
	reason, notGranted := s.unavailable[name]
	return Pending{manifest: m, key: name, err: cannotRun(m.Name, notGranted, reason)}, true
}

// Pending returns the filter named name when its first version is still
// loading: there is no version to serve yet.
func (s *Set) Pending(name string) (Pending, bool) {
	m, ok := s.loading[name]
	if _, serving := s.filters[name]; !ok || serving {
		return Pending{}, false
	}
	return Pending{manifest: m, key: name}, true
}

// PendingListeners returns the fatal listeners whose first version is
// still loading, highest priority first: the events they subscribe to
// fail with their Err (503) meanwhile, as they would if the listener
// failed. A non-fatal listener still loading is skipped, as its failure
// would be.
func (s *Set) PendingListeners() []Pending { return s.pendingListeners }

// Transformation returns the transformation filter named name.
func (s *Set) Transformation(name string) (Transformation, bool) {
	f, ok := s.filters[name]
	if !ok || f.manifest.Kind != KindTransformation {
		return Transformation{}, false
	}
	return Transformation{f}, true
}

// TransformationNames returns the names of the transformation filters, sorted.
func (s *Set) TransformationNames() []string {
	var out []string
	for n, f := range s.filters {
		if f.manifest.Kind == KindTransformation && !IsCanaryKey(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Unready lists why an instance serving s cannot answer everything it
// advertises: every filter folder that failed with no version serving,
// unless its manifest makes it an optional (non-fatal) listener, whose
// failure no request sees. Folders still loading are not listed: their
// requests answer 503 until they load, and Host.Initial covers the first
// load. Filters deployed through the API are not listed either: the fleet
// runs them, an instance that cannot answers their requests 503
// (Unavailable) and serves everything else.
func (s *Set) Unready() []string {
	var out []string
	for name, reason := range s.failures {
		if _, serving := s.filters[name]; serving || s.origins[name] == SourceAPI {
			continue
		}
		if m := s.failedManifests[name]; m != nil && m.Kind == KindListener && !m.IsFatal() {
			continue
		}
		out = append(out, reason)
	}
	sort.Strings(out)
	return out
}

// Listeners returns the listener filters, highest priority first.
func (s *Set) Listeners() []Listener { return s.listeners }

// Status is what GET /filters shows about one filter folder. State is
// that of the folder's current files (StateLoading, StateReady or
// StateFailed); Loaded says whether a version serves, which may be an
// older one while the current files load or after they failed. Manifest
// and ContentHash are the serving version's, or, while the first version
// loads, the manifest being loaded.
type Status struct {
	Name    string `json:"name"`
	Source  string `json:"source"`
	Version string `json:"version,omitempty"`
	// Target is, for a filter deployed through the API, the version of its
	// current files, whose State this is: Version once it serves.
	Target      string           `json:"target,omitempty"`
	State       string           `json:"state"`
	Loaded      bool             `json:"loaded"`
	ContentHash string           `json:"contentHash,omitempty"`
	Manifest    *Manifest        `json:"manifest,omitempty"`
	Error       string           `json:"error,omitempty"`
	Stats       *Stats           `json:"stats,omitempty"`
	Counters    map[string]int64 `json:"counters,omitempty"`
}

// Status lists every filter folder with its state: loaded filters with
// their manifest, content hash, counters and, when their files changed
// into something refused, the reason; folders that never loaded with their
// error; folders whose first version is loading with its manifest.
func (s *Set) Status() []Status {
	out := []Status{}
	state := func(name string) string {
		if _, ok := s.loading[name]; ok {
			return StateLoading
		}
		if _, ok := s.unavailable[name]; ok {
			return StateUnavailable
		}
		if _, ok := s.failures[name]; ok {
			return StateFailed
		}
		return StateReady
	}
	for name, f := range s.filters {
		st := f.Stats()
		out = append(out, Status{Name: name, Source: f.origin, Version: f.version, Target: s.targets[name], State: state(name), Loaded: true,
			ContentHash: f.hash, Manifest: f.manifest, Error: s.failures[name], Stats: &st, Counters: f.Counters()})
	}
	for name, reason := range s.failures {
		if _, ok := s.filters[name]; !ok {
			out = append(out, Status{Name: name, Source: s.origins[name], Target: s.targets[name], State: state(name), Error: reason})
		}
	}
	for _, p := range s.pending() {
		out = append(out, Status{Name: p.key, Source: s.origins[p.key], Target: s.targets[p.key], State: StateLoading, Manifest: p.manifest})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Counters returns every loaded filter's stats_add counters by filter name,
// for GET /stats `custom`.
func (s *Set) Counters() map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for name, f := range s.filters {
		if c := f.Counters(); len(c) > 0 {
			out[name] = c
		}
	}
	return out
}
