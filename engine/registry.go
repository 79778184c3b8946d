package engine

import (
	"fmt"
	"sort"
)

// builtins holds the native transformations; each file registers itself in
// init(). It is never changed after init.
var builtins = map[string]Transformation{}

// register adds a native transformation; a duplicate name is a programming
// error and panics at start-up.
func register(name string, t Transformation) {
	if _, dup := builtins[name]; dup {
		panic(fmt.Sprintf("engine: transformation %q registered twice", name))
	}
	builtins[name] = t
}

// Registry maps transformation names to implementations: the native ones plus
// whatever was added at start-up (WebAssembly filters).
type Registry struct {
	m map[string]Transformation
	// guests, when set, supplies guest transformations (see SetGuests).
	guests Guests
}

// NewRegistry returns a registry holding every native transformation.
func NewRegistry() *Registry {
	r := &Registry{m: make(map[string]Transformation, len(builtins))}
	for k, v := range builtins {
		r.m[k] = v
	}
	return r
}

// Register adds a transformation; it fails when the name is taken.
func (r *Registry) Register(name string, t Transformation) error {
	if _, dup := r.m[name]; dup {
		return fmt.Errorf("engine: transformation %q already registered", name)
	}
	r.m[name] = t
	return nil
}

// Lookup returns the transformation registered under name.
func (r *Registry) Lookup(name string) (Transformation, bool) {
	if t, ok := r.m[name]; ok {
		return t, true
	}
	if r.guests != nil {
		if g, ok := r.guests.Guest(name); ok {
			return guestTransformation{name: name, guest: g}, true
		}
	}
	return nil, false
}

// Names returns every registered name, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.m))
	for k := range r.m {
		out = append(out, k)
	}
	if r.guests != nil {
		for _, k := range r.guests.GuestNames() {
			if _, native := r.m[k]; !native {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
