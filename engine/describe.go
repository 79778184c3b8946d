package engine

import "github.com/vitrine/vitrine/engine/schema"

// ParamType is the type of a transformation parameter, as clients see it
// (schema.Type).
type ParamType = schema.Type

// The parameter types a description can name: those of the one parameter
// schema (package schema), which a WASM filter's manifest uses too
// (wasm-sdk/ABI.md), so native and guest transformations describe
// themselves alike.
const (
	ParamInt    = schema.TypeInt
	ParamNumber = schema.TypeNumber
	ParamBool   = schema.TypeBool
	ParamString = schema.TypeString
	ParamColor  = schema.TypeColor
	ParamEnum   = schema.TypeEnum
)

// ParamDesc describes one parameter of a transformation: the one
// parameter schema (schema.Param), with the builder methods the native
// transformations declare their parameters through (def, orNone,
// required). A guest's description converts its manifest's schema.Param.
type ParamDesc schema.Param

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

// described is a native transformation with its description: the parse
// function and the parameters it accepts, declared once in the
// transformation's own file. The parse function reads its parameters
// through that declaration (Params.Int and the other getters), so the
// description GET /transformations serves is the parser's.
type described struct {
	TransformationFunc
	desc Description
	decl map[string]ParamDesc
}

// Describe returns the description given at registration.
func (d described) Describe() Description { return d.desc }

// Parse hands the declaration to p, then parses.
func (d described) Parse(p *Params) (Step, error) {
	p.decl = d.decl
	return d.TransformationFunc(p)
}

// describe wraps a parse function with what it accepts; every native
// transformation registers through it. A parameter declared twice panics,
// at init.
func describe(parse TransformationFunc, summary string, params ...ParamDesc) Transformation {
	if params == nil {
		params = []ParamDesc{}
	}
	decl := make(map[string]ParamDesc, len(params))
	for _, p := range params {
		if _, dup := decl[p.Name]; dup {
			panic("engine: parameter " + p.Name + " declared twice")
		}
		decl[p.Name] = p
	}
	return described{parse, Description{Kind: "native", Description: summary, Params: params}, decl}
}

func bound(v float64) *float64 { return &v }

// intParam describes an integer within [min, max].
func intParam(name string, min, max int, doc string) ParamDesc {
	return ParamDesc{Name: name, Type: ParamInt, Min: bound(float64(min)), Max: bound(float64(max)), Description: doc}
}

// numParam describes a number within [min, max].
func numParam(name string, min, max float64, doc string) ParamDesc {
	return ParamDesc{Name: name, Type: ParamNumber, Min: bound(min), Max: bound(max), Description: doc}
}

// colorParam describes a hex colour (rgb, rrggbb or rrggbbaa; ParseColor).
func colorParam(name, doc string) ParamDesc {
	return ParamDesc{Name: name, Type: ParamColor, Description: doc}
}

// enumParam describes a value out of a fixed list.
func enumParam(name string, values []string, doc string) ParamDesc {
	return ParamDesc{Name: name, Type: ParamEnum, Values: values, Description: doc}
}

// stringParam describes free text.
func stringParam(name, doc string) ParamDesc {
	return ParamDesc{Name: name, Type: ParamString, Description: doc}
}

// def returns p with a default value.
func (p ParamDesc) def(v any) ParamDesc { p.Default = v; return p }

// orNone returns the colour parameter p also taking none (transparent).
func (p ParamDesc) orNone() ParamDesc { p.AllowNone = true; return p }

// required returns p marked as required.
func (p ParamDesc) required() ParamDesc { p.Required = true; return p }

var _ Describer = described{}
