package engine

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// paramStart matches the start of one `name=` pair inside a parameter string.
// Values run lazily up to the next `,name=` or the end (REFERENCE.md 5.1), so
// values may contain commas: `poi=410,310,crop=close`.
var paramStart = regexp.MustCompile(`(?:^|,)(\w+)=`)

// Spec is one parsed `t[]` element before validation: a name and its raw
// parameter values.
type Spec struct {
	Name   string
	Params map[string]string
}

// ParseSpec splits one `t[]` element at its first `:` into a name and raw
// parameters. A repeated parameter keeps its last value; text without `=` is
// ignored, as in the reference implementation.
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
// Getters record the first problem; Err reports it, or any parameter that no
// getter asked for (unknown parameters are rejected, RULINGS.md 18). An
// explicit 0 is a value, never "missing".
type Params struct {
	transformation string
	vals           map[string]string
	used           map[string]bool
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

// String returns the raw value, or def when absent.
func (p *Params) String(name, def string) string {
	if !p.Has(name) {
		return def
	}
	return p.vals[name]
}

// Enum returns the value, which must be one of allowed, or def when absent.
func (p *Params) Enum(name, def string, allowed ...string) string {
	v := p.String(name, def)
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.Fail("Invalid value for %s: %q (allowed: %s)", name, v, strings.Join(allowed, ", "))
	return def
}

// Int returns the integer value within [min, max], or def when absent.
func (p *Params) Int(name string, def, min, max int) int {
	if !p.Has(name) {
		return def
	}
	raw := strings.TrimSpace(p.vals[name])
	v, err := strconv.Atoi(raw)
	if err != nil {
		p.Fail("Invalid value for %s: %q is not an integer", name, raw)
		return def
	}
	if v < min || v > max {
		p.Fail("%s must be between %d and %d, got %d", name, min, max, v)
		return def
	}
	return v
}

// Float returns the finite number within [min, max], or def when absent.
func (p *Params) Float(name string, def, min, max float64) float64 {
	if !p.Has(name) {
		return def
	}
	raw := strings.TrimSpace(p.vals[name])
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || v != v || v > 1e300 || v < -1e300 {
		p.Fail("Invalid value for %s: %q is not a number", name, raw)
		return def
	}
	if v < min || v > max {
		p.Fail("%s must be between %g and %g, got %g", name, min, max, v)
		return def
	}
	return v
}

// Color is an sRGB colour; A is 0 for fully transparent (`none`), 255 opaque.
type Color struct{ R, G, B, A uint8 }

// Floats returns the colour as libvips band values (R, G, B).
func (c Color) Floats() []float64 { return []float64{float64(c.R), float64(c.G), float64(c.B)} }

// ParseColor parses hex colours of 3 or 6 digits, with or without a leading
// `#`, and `none` (transparent) when allowNone is set.
func ParseColor(s string, allowNone bool) (Color, bool) {
	s = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "#")
	if allowNone && (s == "none" || s == "transparent") {
		return Color{}, true
	}
	if len(s) == 3 {
		s = string([]byte{s[0], s[0], s[1], s[1], s[2], s[2]})
	}
	if len(s) != 6 {
		return Color{}, false
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return Color{}, false
	}
	return Color{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}, true
}

// Color returns the colour value, or def (a hex string) when absent.
func (p *Params) Color(name, def string, allowNone bool) Color {
	raw := p.String(name, def)
	c, ok := ParseColor(raw, allowNone)
	if !ok {
		p.Fail("Invalid value for %s: %q is not a hex colour (rgb or rrggbb)", name, raw)
		c, _ = ParseColor(def, allowNone)
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
