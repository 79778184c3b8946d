package filters

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
)

// The kinds of filter (manifest `kind`).
const (
	KindTransformation = "transformation"
	KindListener       = "listener"
)

// Limits are a filter's resource limits (manifest `limits`). A limit the
// manifest leaves out takes its default; one it gives must be in range (0
// is refused, not taken for the default).
type Limits struct {
	// MemoryMB is the most linear memory one instance may have, 1-4096.
	MemoryMB int `json:"memoryMB"`
	// TimeoutMs is the most one call may take, wall clock, 1-60000.
	TimeoutMs int `json:"timeoutMs"`
	// Instances is the most instances that run at once, 1-64.
	Instances int `json:"instances"`
	// Queue is the most calls that may wait for an instance, 0-1024
	// (default 4 per instance); the operator's filters.maxQueue caps it.
	Queue int `json:"queue"`
	// QueueMs is the most a call may wait for an instance, 1-60000
	// (default timeoutMs); the operator's filters.maxQueueWait caps it.
	QueueMs int `json:"queueMs"`
}

// Manifest is a parsed and validated filter.json (ABI.md section 2).
type Manifest struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	ABI         int    `json:"abi"`
	Kind        string `json:"kind"`
	Description string `json:"description,omitempty"`
	// Params is the parameter schema of a transformation.
	Params map[string]*Param `json:"params,omitempty"`
	// Events, Priority and Fatal configure a listener.
	Events   []string `json:"events,omitempty"`
	Priority int      `json:"priority,omitempty"`
	// Fatal is nil when the manifest does not say; see IsFatal.
	Fatal        *bool           `json:"fatal,omitempty"`
	Limits       Limits          `json:"limits"`
	Capabilities []string        `json:"capabilities,omitempty"`
	Settings     json.RawMessage `json:"settings,omitempty"`
}

// IsFatal reports whether a failure of this listener fails the request
// (the default) rather than being logged and skipped.
func (m *Manifest) IsFatal() bool { return m.Fatal == nil || *m.Fatal }

var (
	filterName = regexp.MustCompile(`^[a-z][a-zA-Z0-9_-]{0,63}$`)
	paramName  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,31}$`)
)

// The bounds of a manifest's fields (README, Filters): what a manifest may
// hold is served in every GET /filters and kept in every instance's memory,
// so none of it grows without bound. Each refusal names the field and its
// bound.
const (
	MaxManifestBytes    = 2 << 20 // filter.json as a whole
	MaxVersionBytes     = 64
	MaxDescriptionBytes = 2048 // the filter's and each parameter's
	MaxParams           = 32
	MaxParamValues      = 64  // an enum's values
	MaxValueBytes       = 256 // an enum value, a default
	MaxEvents           = 32
	MaxSettingsBytes    = 1 << 20
)

// Defaults of the limits a manifest leaves out.
const (
	DefaultMemoryMB  = 128
	DefaultTimeoutMs = 2000
)

// ParseManifest reads filter.json strictly: unknown fields, trailing data,
// a value of the wrong type or out of range are errors naming the field.
// Defaults are filled in (limits, parameter defaults normalised).
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("filter.json: %d bytes, over the %d a manifest may take", len(data), MaxManifestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	// Why numbers: a parameter's default keeps its text ("6.0" is no int).
	dec.UseNumber()
	// Why preset: a limit the manifest leaves out takes its default, but a
	// limit it gives as 0 is refused; decoding overwrites only the limits
	// that are there.
	m := &Manifest{Limits: Limits{MemoryMB: unsetLimit, TimeoutMs: unsetLimit, Instances: unsetLimit,
		Queue: unsetLimit, QueueMs: unsetLimit}}
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf("filter.json: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("filter.json: data after the manifest object")
	}
	if err := checkKeys(data, reflect.TypeOf(m), ""); err != nil {
		return nil, fmt.Errorf("filter.json: %w", err)
	}
	if err := m.bounded(); err != nil {
		return nil, fmt.Errorf("filter.json: %w", err)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("filter.json: %w", err)
	}
	return m, nil
}

// validate checks every field and fills defaults.
func (m *Manifest) validate() error {
	switch {
	case !filterName.MatchString(m.Name):
		return fmt.Errorf("name: %q does not match [a-z][a-zA-Z0-9_-]{0,63}", m.Name)
	case strings.TrimSpace(m.Version) == "":
		return errors.New("version: required")
	case m.ABI != 1:
		return fmt.Errorf("abi: this host speaks ABI 1, the manifest says %d", m.ABI)
	}
	switch m.Kind {
	case KindTransformation:
		if len(m.Events) > 0 || m.Priority != 0 || m.Fatal != nil {
			return errors.New("events, priority and fatal are for listeners, not transformations")
		}
	case KindListener:
		if len(m.Params) > 0 {
			return errors.New("params: listeners take no parameters")
		}
		if len(m.Events) == 0 {
			return errors.New("events: a listener needs at least one event")
		}
		for _, e := range m.Events {
			if !knownEvent(e) {
				return fmt.Errorf("events: %q is not an event the host fires, nor a pattern matching one "+
					"(images.post, image.*, *.get, *; wasm-sdk/ABI.md lists the events)", e)
			}
		}
	default:
		return fmt.Errorf("kind: want %q or %q, got %q", KindTransformation, KindListener, m.Kind)
	}
	if err := m.Limits.validate(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, c := range m.Capabilities {
		if c != CapClock && c != CapRandom {
			return fmt.Errorf("capabilities: unknown capability %q (want clock or random)", c)
		}
		if seen[c] {
			return fmt.Errorf("capabilities: %q is listed twice", c)
		}
		seen[c] = true
	}
	if len(m.Settings) > 0 && bytes.Equal(bytes.TrimSpace(m.Settings), []byte("null")) {
		m.Settings = nil
	}
	names := make([]string, 0, len(m.Params))
	for n := range m.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !paramName.MatchString(n) {
			return fmt.Errorf("params: name %q does not match [a-zA-Z][a-zA-Z0-9_]{0,31}", n)
		}
		p := m.Params[n]
		if p == nil {
			return fmt.Errorf("params.%s: want an object", n)
		}
		if err := p.validate(n); err != nil {
			return fmt.Errorf("params.%s: %w", n, err)
		}
	}
	return nil
}

// bounded checks the manifest's fields against their bounds (the
// constants above), before validate reads them.
func (m *Manifest) bounded() error {
	over := func(field string, n, limit int, unit string) error {
		if n > limit {
			return fmt.Errorf("%s: %d %s, over the limit of %d", field, n, unit, limit)
		}
		return nil
	}
	errs := []error{
		over("version", len(m.Version), MaxVersionBytes, "bytes"),
		over("description", len(m.Description), MaxDescriptionBytes, "bytes"),
		over("params", len(m.Params), MaxParams, "parameters"),
		over("events", len(m.Events), MaxEvents, "events"),
		over("settings", len(m.Settings), MaxSettingsBytes, "bytes"),
	}
	for _, n := range slices.Sorted(maps.Keys(m.Params)) {
		p := m.Params[n]
		if p == nil {
			continue // validate says what is wrong
		}
		errs = append(errs, over("params."+n+".description", len(p.Description), MaxDescriptionBytes, "bytes"),
			over("params."+n+".values", len(p.Values), MaxParamValues, "values"))
		for _, v := range p.Values {
			errs = append(errs, over("params."+n+".values", len(v), MaxValueBytes, "bytes in a value"))
		}
		switch d := p.Default.(type) {
		case string:
			errs = append(errs, over("params."+n+".default", len(d), MaxValueBytes, "bytes"))
		case json.Number:
			errs = append(errs, over("params."+n+".default", len(d), MaxValueBytes, "bytes"))
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// unsetLimit marks a limit the manifest does not give (see ParseManifest).
const unsetLimit = math.MinInt

// validate fills the defaults of the limits the manifest leaves out and
// checks the others: a limit that is there must be in range, 0 included.
func (l *Limits) validate() error {
	if l.MemoryMB == unsetLimit {
		l.MemoryMB = DefaultMemoryMB
	}
	if l.TimeoutMs == unsetLimit {
		l.TimeoutMs = DefaultTimeoutMs
	}
	if l.Instances == unsetLimit {
		l.Instances = min(runtime.NumCPU(), 64)
	}
	if l.Queue == unsetLimit {
		l.Queue = 4 * l.Instances
	}
	if l.QueueMs == unsetLimit {
		l.QueueMs = l.TimeoutMs
	}
	switch {
	case l.MemoryMB < 1 || l.MemoryMB > 4096:
		return fmt.Errorf("limits.memoryMB: want 1-4096, got %d", l.MemoryMB)
	case l.TimeoutMs < 1 || l.TimeoutMs > 60000:
		return fmt.Errorf("limits.timeoutMs: want 1-60000, got %d", l.TimeoutMs)
	case l.Instances < 1 || l.Instances > 64:
		return fmt.Errorf("limits.instances: want 1-64, got %d", l.Instances)
	case l.Queue < 0 || l.Queue > 1024:
		return fmt.Errorf("limits.queue: want 0-1024, got %d", l.Queue)
	case l.QueueMs < 1 || l.QueueMs > 60000:
		return fmt.Errorf("limits.queueMs: want 1-60000, got %d", l.QueueMs)
	}
	return nil
}

// ParamNames returns the schema's parameter names, sorted.
func (m *Manifest) ParamNames() []string {
	names := make([]string, 0, len(m.Params))
	for n := range m.Params {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
