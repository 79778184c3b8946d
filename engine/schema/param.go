package schema

// Type is the type of a transformation parameter, as clients and filter
// manifests name it (wasm-sdk/ABI.md section 2).
type Type string

// The parameter types.
const (
	TypeInt    Type = "int"
	TypeNumber Type = "number"
	TypeBool   Type = "bool"
	TypeString Type = "string"
	TypeColor  Type = "color"
	TypeEnum   Type = "enum"
)

// Param describes one parameter of a transformation, native or guest:
// what `GET /transformations` serves for each (api/openapi.yaml,
// Transformation) and what the admin UI builds its forms from. The engine
// declares its parameters with it and a filter's manifest adds only what
// is particular to guests.
type Param struct {
	Name     string `json:"name"`
	Type     Type   `json:"type"`
	Required bool   `json:"required,omitempty"`
	// Default is the value a parameter left out takes, nil when there is
	// none. It has the parameter's JSON type: a number (int or float64)
	// for int and number, a bool for bool, a string otherwise, so that a
	// description shows `6`, never `"6"`.
	Default any `json:"default,omitempty"`
	// Min and Max bound an int or a number; nil for no bound.
	Min         *float64 `json:"min,omitempty"`
	Max         *float64 `json:"max,omitempty"`
	Values      []string `json:"values,omitempty"`
	Description string   `json:"description,omitempty"`
	// AllowNone is set on a colour parameter that also takes `none`
	// (transparent; ParseColor). Only native parameters set it; a
	// description does not show it.
	AllowNone bool `json:"-"`
}
