package filters

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vitrine/vitrine/engine/schema"
)

// DefaultMaxLength is the most bytes a string parameter takes when its
// schema does not say.
const DefaultMaxLength = 256

// Param is one entry of a transformation's parameter schema: the one
// parameter schema (schema.Param, whose name is the entry's key in
// `params`; a manifest need not repeat it) and maxLength, which only a
// guest's strings have. Once the manifest is validated, Default has the
// parameter's JSON type, normalised (an int's default is a number, as a
// native transformation's), so the engine describes a guest with
// Param.Param as it is.
type Param struct {
	schema.Param
	MaxLength int `json:"maxLength,omitempty"`

	// def is the default normalised as the guest reads it; hasDef reports
	// that there is one.
	def    string
	hasDef bool
}

// DefaultValue returns the default as the guest reads it, and whether
// there is one.
func (p *Param) DefaultValue() (string, bool) { return p.def, p.hasDef }

// validate checks the schema entry of the parameter called name and
// normalises its default.
func (p *Param) validate(name string) error {
	if p.Name != "" && p.Name != name {
		return fmt.Errorf("name: %q is not the parameter's key", p.Name)
	}
	p.Name = name
	switch p.Type {
	case schema.TypeInt, schema.TypeNumber:
		if p.Min != nil && p.Max != nil && *p.Min > *p.Max {
			return fmt.Errorf("min %g is larger than max %g", *p.Min, *p.Max)
		}
		if p.Type == schema.TypeInt {
			for _, b := range []*float64{p.Min, p.Max} {
				if b != nil && *b != math.Trunc(*b) {
					return fmt.Errorf("min and max of an int must be integers, got %g", *b)
				}
			}
		}
	case schema.TypeBool, schema.TypeString, schema.TypeColor, schema.TypeEnum:
		if p.Min != nil || p.Max != nil {
			return fmt.Errorf("min and max are for int and number, not %s", p.Type)
		}
	default:
		return fmt.Errorf("type: want int, number, bool, string, color or enum, got %q", p.Type)
	}
	if p.MaxLength != 0 && p.Type != schema.TypeString {
		return fmt.Errorf("maxLength is for string, not %s", p.Type)
	}
	if p.MaxLength < 0 {
		return fmt.Errorf("maxLength: must be positive, got %d", p.MaxLength)
	}
	if p.Type == schema.TypeString && p.MaxLength == 0 {
		p.MaxLength = DefaultMaxLength
	}
	if p.Type == schema.TypeEnum {
		if len(p.Values) == 0 {
			return errors.New("values: an enum needs at least one value")
		}
		for i, v := range p.Values {
			if v == "" || slices.Contains(p.Values[:i], v) {
				return fmt.Errorf("values: %q is empty or listed twice", v)
			}
		}
	} else if len(p.Values) > 0 {
		return fmt.Errorf("values is for enum, not %s", p.Type)
	}
	return p.validateDefault()
}

// validateDefault normalises the default, if any, and gives it its JSON
// type.
func (p *Param) validateDefault() error {
	if p.Default == nil {
		return nil
	}
	if p.Required {
		return errors.New("a required parameter has no use for a default")
	}
	raw, err := p.defaultText()
	if err != nil {
		return err
	}
	if p.def, err = p.normalise(raw); err != nil {
		return fmt.Errorf("default: %w", err)
	}
	p.hasDef = true
	switch p.Type {
	case schema.TypeInt:
		v, _ := strconv.ParseInt(p.def, 10, 64)
		p.Default = int(v)
	case schema.TypeNumber:
		p.Default, _ = strconv.ParseFloat(p.def, 64)
	case schema.TypeBool:
		p.Default = p.def == "true"
	default:
		p.Default = p.def
	}
	return nil
}

// defaultText turns the JSON default (decoded with numbers as json.Number)
// into the text a request would carry; it must have the parameter's JSON
// type (a number for int and number, a boolean for bool, a string
// otherwise).
func (p *Param) defaultText() (string, error) {
	switch t := p.Default.(type) {
	case json.Number:
		if p.Type == schema.TypeInt || p.Type == schema.TypeNumber {
			return t.String(), nil
		}
	case bool:
		if p.Type == schema.TypeBool {
			return strconv.FormatBool(t), nil
		}
	case string:
		if p.Type == schema.TypeString || p.Type == schema.TypeColor || p.Type == schema.TypeEnum {
			return t, nil
		}
	}
	b, _ := json.Marshal(p.Default)
	return "", fmt.Errorf("default: %s is not of type %s", b, p.Type)
}

// decimal is what a `number` accepts: no hex, no inf or nan, no underscores.
var decimal = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// normalise parses one value and returns it as the guest reads it; the
// error is a public sentence without the parameter's name.
func (p *Param) normalise(raw string) (string, error) {
	switch p.Type {
	case schema.TypeInt:
		v, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return "", fmt.Errorf("%q is not an integer", raw)
		}
		if err := p.inRange(float64(v), raw); err != nil {
			return "", err
		}
		return strconv.FormatInt(v, 10), nil
	case schema.TypeNumber:
		v, err := strconv.ParseFloat(raw, 64)
		if !decimal.MatchString(raw) || err != nil || math.IsInf(v, 0) {
			return "", fmt.Errorf("%q is not a number", raw)
		}
		if err := p.inRange(v, raw); err != nil {
			return "", err
		}
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case schema.TypeBool:
		switch raw {
		case "true", "1":
			return "true", nil
		case "false", "0":
			return "false", nil
		}
		return "", fmt.Errorf("%q is not a boolean (true, false, 1 or 0)", raw)
	case schema.TypeString:
		if !utf8.ValidString(raw) {
			return "", errors.New("the text is not valid UTF-8")
		}
		if len(raw) > p.MaxLength {
			return "", fmt.Errorf("the text is longer than %d bytes", p.MaxLength)
		}
		return raw, nil
	case schema.TypeColor:
		if c, ok := schema.ParseColor(raw, false); ok {
			return c.Hex(), nil
		}
		return "", fmt.Errorf("%q is not a hex colour (rgb, rrggbb or rrggbbaa)", raw)
	case schema.TypeEnum:
		if slices.Contains(p.Values, raw) {
			return raw, nil
		}
		return "", fmt.Errorf("%q is not one of %s", raw, strings.Join(p.Values, ", "))
	}
	return "", fmt.Errorf("unknown type %q", p.Type)
}

// inRange checks v against the schema's bounds.
func (p *Param) inRange(v float64, raw string) error {
	if (p.Min != nil && v < *p.Min) || (p.Max != nil && v > *p.Max) {
		lo, hi := "-inf", "+inf"
		if p.Min != nil {
			lo = strconv.FormatFloat(*p.Min, 'g', -1, 64)
		}
		if p.Max != nil {
			hi = strconv.FormatFloat(*p.Max, 'g', -1, 64)
		}
		return fmt.Errorf("must be between %s and %s, got %s", lo, hi, raw)
	}
	return nil
}

// Normalise validates the raw parameters of one `t[]` step against the
// schema and returns them as the guest reads them, defaults filled in. Every
// error is KindInvalid and names the parameter (the engine prefixes the
// transformation's name).
func (m *Manifest) Normalise(raw map[string]string) (map[string]string, error) {
	var unknown []string
	for k := range raw {
		if _, ok := m.Params[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, invalidf("Unknown parameter(s): %s", strings.Join(unknown, ", "))
	}
	out := make(map[string]string, len(m.Params))
	for _, name := range m.ParamNames() {
		p := m.Params[name]
		v, given := raw[name]
		switch {
		case given:
			n, err := p.normalise(v)
			if err != nil {
				return nil, invalidf("Invalid value for %s: %s%s", name, err.Error(), schema.RunOn(v))
			}
			out[name] = n
		case p.hasDef:
			out[name] = p.def
		case p.Required:
			return nil, invalidf("Missing required parameter: %s", name)
		}
	}
	return out, nil
}
