package engine

// ParamType is the type of a transformation parameter, as clients see it.
type ParamType string

// The parameter types a description can name. They match the types of a WASM
// filter's parameter schema (wasm-sdk/ABI.md), so native and guest
// transformations describe themselves alike.
const (
	ParamInt    ParamType = "int"
	ParamNumber ParamType = "number"
	ParamBool   ParamType = "bool"
	ParamString ParamType = "string"
	ParamColor  ParamType = "color"
	ParamEnum   ParamType = "enum"
)

// ParamDesc describes one parameter of a transformation.
type ParamDesc struct {
	Name        string    `json:"name"`
	Type        ParamType `json:"type"`
	Required    bool      `json:"required,omitempty"`
	Default     any       `json:"default,omitempty"`
	Min         *float64  `json:"min,omitempty"`
	Max         *float64  `json:"max,omitempty"`
	Values      []string  `json:"values,omitempty"`
	Description string    `json:"description,omitempty"`
}

// Description is the machine-readable description of a transformation: what
// `GET /transformations` serves and what the admin UI builds its forms from.
type Description struct {
	Name string `json:"name"`
	// Kind is "native" for transformations built into the engine and "wasm"
	// for guest transformations loaded from filters.
	Kind        string      `json:"kind"`
	Description string      `json:"description,omitempty"`
	Params      []ParamDesc `json:"params"`
}

// Describer is implemented by transformations that describe their
// parameters. The registry asks every transformation it holds for one.
type Describer interface {
	Describe() Description
}

// Describe returns the description of every registered transformation,
// sorted by name. A transformation that does not implement Describer is
// listed with its name and no parameters.
func (r *Registry) Describe() []Description {
	names := r.Names()
	out := make([]Description, 0, len(names))
	for _, n := range names {
		d := Description{Name: n, Kind: "native", Params: []ParamDesc{}}
		t, _ := r.Lookup(n)
		if ds, ok := t.(Describer); ok {
			d = ds.Describe()
			d.Name = n
			if d.Params == nil {
				d.Params = []ParamDesc{}
			}
		}
		out = append(out, d)
	}
	return out
}
