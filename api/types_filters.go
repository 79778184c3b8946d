package api

import "encoding/json"

// The JSON bodies of the filter routes, GET /filters and the filters
// deployed through the API (types.go says how the answer types are used).

// FilterStatus is what GET /filters shows about one filter folder. State
// is that of the folder's current files (loading, ready or failed); Loaded
// says whether a version serves, which may be an older one while the
// current files load or after they failed.
type FilterStatus struct {
	// Name is the filter's name; a canary version is listed as
	// <name>@canary.
	Name string `json:"name"`
	// Source is "dir" for a folder of filters.dir (this instance's only,
	// read-only through the API), "api" for a version deployed through
	// the API; Version is the latter's version.
	Source  string `json:"source"`
	Version string `json:"version,omitempty"`
	// Target is, for source api, the version of the current files, whose
	// State this is.
	Target      string `json:"target,omitempty"`
	State       string `json:"state"`
	Loaded      bool   `json:"loaded"`
	ContentHash string `json:"contentHash,omitempty"`
	// Manifest is the filter's filter.json as validated.
	Manifest json.RawMessage  `json:"manifest,omitempty"`
	Error    string           `json:"error,omitempty"`
	Stats    *FilterStats     `json:"stats,omitempty"`
	Counters map[string]int64 `json:"counters,omitempty"`
}

// FilterStats are a loaded filter's call counters.
type FilterStats struct {
	Calls      int64 `json:"calls"`
	Errors     int64 `json:"errors"`
	Timeouts   int64 `json:"timeouts"`
	Rejections int64 `json:"rejections"`
	// P50Ms and P99Ms are percentiles of the most recent call durations,
	// in milliseconds.
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	// Busy counts calls refused because the filter had no room.
	Busy int64 `json:"busy"`
	// Instances is how many instances exist now; Waiting how many calls
	// wait for one.
	Instances int `json:"instances"`
	Waiting   int `json:"waiting"`
}

// FilterList is GET /filters and POST /filters/reload.
type FilterList struct {
	// Filters are this instance's filters.
	Filters []FilterStatus `json:"filters"`
	// Deployed is the active set of filters deployed through the API,
	// with each one's versions (GET /filters only).
	Deployed []DeployedFilter `json:"deployed"`
	// Instances are the instances that reported what they loaded in the
	// last minute (GET /filters only).
	Instances []FilterInstance `json:"instances"`
}

// DeployedFilter is one filter of the active set: the version every
// instance serves, whether it is enabled, its canary, and its versions.
type DeployedFilter struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Previous is the version a rollback without a version goes back to.
	Previous string `json:"previous,omitempty"`
	Enabled  bool   `json:"enabled"`
	// Canary, when set, is served instead of Version for Percent percent
	// of images, chosen per image.
	Canary   string          `json:"canary,omitempty"`
	Percent  int             `json:"percent"`
	Versions []FilterVersion `json:"versions"`
	// Rollout says where Version runs, per instance that reported in the
	// last minute; none for a disabled filter.
	Rollout *FilterRollout `json:"rollout,omitempty"`
}

// The states of a FilterRollout.
const (
	// RolloutActive: every instance that reported runs the version.
	RolloutActive = "active"
	// RolloutLoading: some instance has not loaded it yet.
	RolloutLoading = "loading"
	// RolloutPartial: every instance has loaded it or given up, and some
	// cannot run it (unavailable or failed there).
	RolloutPartial = "partial"
)

// FilterRollout is where a deployed filter's active version runs.
type FilterRollout struct {
	// State is RolloutActive, RolloutLoading or RolloutPartial.
	State     string             `json:"state"`
	Instances []FilterOnInstance `json:"instances"`
}

// FilterOnInstance is the state of a deployed filter's active version on
// one instance: ready, loading, unavailable (the instance does not grant a
// capability it asks for) or failed, with the reason of the last two.
type FilterOnInstance struct {
	Instance string `json:"instance"`
	State    string `json:"state"`
	Error    string `json:"error,omitempty"`
}

// FilterVersion is one uploaded version of a filter.
type FilterVersion struct {
	// Version is the SHA-256 of the bundle (filters/README.md, Filters through the
	// API); its first 32 digits are the filter's contentHash.
	Version  string          `json:"version"`
	Size     int64           `json:"size"`
	Created  string          `json:"created"`
	Actor    string          `json:"actor,omitempty"`
	Manifest json.RawMessage `json:"manifest"`
}

// FilterInstance is what one instance last reported it serves.
type FilterInstance struct {
	Instance  string          `json:"instance"`
	Heartbeat string          `json:"heartbeat"`
	Filters   []FilterRunning `json:"filters"`
}

// FilterRunning is one filter an instance serves: its source, version (for
// the API's), content hash and state. Target is the version of the
// instance's current files for the filter, whose State (loading, ready,
// failed, unavailable) this is, and Error why they failed or are
// unavailable there.
type FilterRunning struct {
	Name        string `json:"name"`
	Source      string `json:"source"`
	Version     string `json:"version,omitempty"`
	Target      string `json:"target,omitempty"`
	ContentHash string `json:"contentHash,omitempty"`
	State       string `json:"state"`
	Error       string `json:"error,omitempty"`
}
