package engine

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/engine/schema"
)

// paramStart matches the start of one `name=` pair inside a parameter string.
// Values run lazily up to the next `,name=` or the end, so values may
// contain commas: `poi=410,310,crop=close`.
var paramStart = regexp.MustCompile(`(?:^|,)(\w+)=`)

// Spec is one parsed `t[]` element before validation: a name and its raw
// parameter values.
type Spec struct {
	Name   string
	Params map[string]string
}

// ParseSpec splits one `t[]` element at its first `:` into a name and raw
// parameters. A repeated parameter keeps its last value; text without `=` is
// ignored, as Imbo does.
func ParseSpec(s string) Spec {
	name, rest, _ := strings.Cut(s, ":")
	sp := Spec{Name: name, Params: map[string]string{}}
	locs := paramStart.FindAllStringSubmatchIndex(rest, -1)
	for i, m := range locs {
		end := len(rest)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		sp.Params[rest[m[2]:m[3]]] = rest[m[1]:end]
	}
	return sp
}

// String renders the spec back to `name:k=v,...` with sorted keys; it is a
// stable form used in cache keys.
func (s Spec) String() string {
	if len(s.Params) == 0 {
		return s.Name
	}
	keys := make([]string, 0, len(s.Params))
	for k := range s.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(s.Name)
	for i, k := range keys {
		if i == 0 {
			b.WriteByte(':')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + s.Params[k])
	}
	return b.String()
}

// Params gives typed, validated access to one transformation's parameters.
// The typed getters read each parameter's type, bounds, allowed values,
// default and whether it is required from the transformation's declaration
// (the ParamDescs given to describe, which GET /transformations also
// serves), so the parser and the description cannot disagree. Getters
// record the first problem; Err reports it, or any parameter that no getter
// asked for (unknown parameters are rejected). An explicit 0 is a value,
// never "missing".
type Params struct {
	transformation string
	vals           map[string]string
	used           map[string]bool
	decl           map[string]ParamDesc
	err            error
}

// NewParams wraps the raw values of the named transformation.
func NewParams(transformation string, vals map[string]string) *Params {
	if vals == nil {
		vals = map[string]string{}
	}
	return &Params{transformation: transformation, vals: vals, used: map[string]bool{}}
}

// Has reports whether the parameter was given (with any value).
func (p *Params) Has(name string) bool {
	p.used[name] = true
	_, ok := p.vals[name]
	return ok
}

// Fail records a 400 error for this transformation; the message is prefixed
// with the transformation's name.
func (p *Params) Fail(format string, args ...any) {
	if p.err == nil {
		p.err = invalidf("%s: %s", p.transformation, fmt.Sprintf(format, args...))
	}
}

// Required records `Missing required parameter: <name>` when name is absent
// and reports whether it is present.
func (p *Params) Required(name string) bool {
	if !p.Has(name) {
		p.Fail("Missing required parameter: %s", name)
		return false
	}
	return true
}

// declared returns the declaration of name, which must be of type t (any
// type when t is empty). A getter for a parameter the transformation did not
// declare is a bug in the transformation, so it panics (and the chain
// parser turns the panic into an internal error).
func (p *Params) declared(name string, t ParamType) ParamDesc {
	d, ok := p.decl[name]
	if !ok || t != "" && d.Type != t {
		panic(fmt.Sprintf("engine: %s: parameter %s is not declared as %s", p.transformation, name, t))
	}
	return d
}

// given reports whether the declared parameter d was given, recording
// `Missing required parameter: <name>` when d is required and absent.
func (p *Params) given(d ParamDesc) bool {
	if d.Required {
		return p.Required(d.Name)
	}
	return p.Has(d.Name)
}

// String returns the raw value of a declared parameter of any type, or its
// default ("" when it has none) when absent.
func (p *Params) String(name string) string {
	d := p.declared(name, "")
	if !p.given(d) {
		def, _ := d.Default.(string)
		return def
	}
	return p.vals[name]
}

// Enum returns the value of a declared enum parameter, which must be one of
// its declared values, or its default when absent. An enum without a
// default also takes the empty value, as "not set".
func (p *Params) Enum(name string) string {
	d := p.declared(name, ParamEnum)
	v := p.String(name)
	if v == "" && d.Default == nil {
		return ""
	}
	for _, a := range d.Values {
		if v == a {
			return v
		}
	}
	p.Fail("Invalid value for %s: %q (allowed: %s)%s", name, v, strings.Join(d.Values, ", "), schema.RunOn(v))
	def, _ := d.Default.(string)
	return def
}

// Int returns the value of a declared integer parameter within its declared
// bounds, or its default (0 when it has none) when absent.
func (p *Params) Int(name string) int {
	d := p.declared(name, ParamInt)
	def := int(number(d.Default))
	if !p.given(d) {
		return def
	}
	raw := strings.TrimSpace(p.vals[name])
	v, err := strconv.Atoi(raw)
	if err != nil {
		p.Fail("Invalid value for %s: %q is not an integer%s", name, raw, schema.RunOn(raw))
		return def
	}
	if min, max := int(*d.Min), int(*d.Max); v < min || v > max {
		p.Fail("%s must be between %d and %d, got %d", name, min, max, v)
		return def
	}
	return v
}

// Float returns the finite value of a declared number parameter within its
// declared bounds, or its default (0 when it has none) when absent.
func (p *Params) Float(name string) float64 {
	d := p.declared(name, ParamNumber)
	def := number(d.Default)
	if !p.given(d) {
		return def
	}
	raw := strings.TrimSpace(p.vals[name])
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || v != v || v > 1e300 || v < -1e300 {
		p.Fail("Invalid value for %s: %q is not a number%s", name, raw, schema.RunOn(raw))
		return def
	}
	if v < *d.Min || v > *d.Max {
		p.Fail("%s must be between %g and %g, got %g", name, *d.Min, *d.Max, v)
		return def
	}
	return v
}

// number is a declared numeric default as a float64, 0 when there is none.
func number(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case float64:
		return n
	}
	return 0
}

// Color is an sRGB colour (schema.Color). A is its opacity: 255 opaque
// (every colour of 3 or 6 digits), 0 fully transparent (`none`), or the
// last two digits of an 8-digit colour. Transformations that only draw
// opaquely use R, G, B.
type Color schema.Color

// Floats returns the colour as libvips band values (R, G, B).
func (c Color) Floats() []float64 { return []float64{float64(c.R), float64(c.G), float64(c.B)} }

// ParseColor parses vitrine's one colour syntax (schema.ParseColor): hex
// of 3, 6 or 8 digits, with or without `#`, either case, and `none`
// (transparent) when allowNone is set.
func ParseColor(s string, allowNone bool) (Color, bool) {
	c, ok := schema.ParseColor(s, allowNone)
	return Color(c), ok
}

// Color returns the value of a declared colour parameter (ParseColor, the
// value's surrounding spaces ignored as for numbers), or its default (a hex
// string, or none) when absent or invalid. none is accepted where the
// declaration allows it (orNone).
func (p *Params) Color(name string) Color {
	d := p.declared(name, ParamColor)
	def, _ := d.Default.(string)
	raw := p.String(name)
	c, ok := ParseColor(strings.TrimSpace(raw), d.AllowNone)
	if !ok {
		p.Fail("Invalid value for %s: %q is not a hex colour (rgb, rrggbb or rrggbbaa)%s", name, raw, schema.RunOn(raw))
		c, _ = ParseColor(def, d.AllowNone)
	}
	return c
}

// Err returns the first recorded problem, or a 400 naming every parameter no
// getter asked for.
func (p *Params) Err() error {
	if p.err != nil {
		return p.err
	}
	var unknown []string
	for k := range p.vals {
		if !p.used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return invalidf("%s: Unknown parameter(s): %s", p.transformation, strings.Join(unknown, ", "))
	}
	return nil
}
