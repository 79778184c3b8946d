package vitrine

import (
	"fmt"
	"image/color"
	"strconv"
)

// Params gives a transformation its parameters for one call. The host has
// validated them against the manifest's schema and applied defaults, so a
// getter fails only for a parameter that is absent (ErrNotFound: no default,
// not required, not in the request) or whose type the manifest declares
// differently from the getter used (ErrInvalid).
//
// The zero Params has no parameters.
type Params struct {
	lookup func(name string) (string, error)
}

// NewParams returns Params that answer from values, which hold parameters in
// the normalised forms of ABI.md section 2 (a colour as "rrggbbaa", a number
// as strconv.FormatFloat writes it...). It exists to unit test a
// transformation function natively and to call one from other Go code; inside
// vitrine the SDK passes Params that read from the host.
func NewParams(values map[string]string) Params {
	return Params{lookup: func(name string) (string, error) {
		v, ok := values[name]
		if !ok {
			return "", ErrNotFound
		}
		return v, nil
	}}
}

// hostParams returns the Params of the current call.
func hostParams() Params {
	return Params{lookup: func(name string) (string, error) {
		b, err := readValue("param_get", 64, func(buf []byte) int32 { return hostParamGet(name, buf) })
		if err != nil {
			return "", err
		}
		return string(b), nil
	}}
}

// Has reports whether the parameter name has a value.
func (p Params) Has(name string) bool {
	_, err := p.String(name)
	return err == nil
}

// String returns the parameter name as text: a string or enum parameter's
// value, or any other parameter's normalised form.
func (p Params) String(name string) (string, error) {
	if p.lookup == nil {
		return "", fmt.Errorf("vitrine: parameter %q: %w", name, ErrNotFound)
	}
	v, err := p.lookup(name)
	if err != nil {
		return "", fmt.Errorf("vitrine: parameter %q: %w", name, err)
	}
	return v, nil
}

// Int returns the int parameter name.
func (p Params) Int(name string) (int, error) {
	return get(p, name, "an int", func(s string) (int, error) { return strconv.Atoi(s) })
}

// Number returns the number parameter name.
func (p Params) Number(name string) (float64, error) {
	return get(p, name, "a number", func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
}

// Bool returns the bool parameter name.
func (p Params) Bool(name string) (bool, error) {
	return get(p, name, "a bool", strconv.ParseBool)
}

// Color returns the color parameter name.
func (p Params) Color(name string) (color.NRGBA, error) {
	return get(p, name, "a colour", ParseColor)
}

// get reads the parameter name and parses it; what names the expected type in
// the error.
func get[T any](p Params, name, what string, parse func(string) (T, error)) (T, error) {
	var zero T
	s, err := p.String(name)
	if err != nil {
		return zero, err
	}
	v, err := parse(s)
	if err != nil {
		return zero, fmt.Errorf("vitrine: parameter %q: %q is not %s: %w", name, s, what, ErrInvalid)
	}
	return v, nil
}
