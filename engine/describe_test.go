package engine

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

// describeSamples are valid values for string parameters whose format the
// description states only in words.
var describeSamples = map[string]string{"smartSize.poi": "10,20"}

// describeConflicts lists parameters left out while another is tried with
// each of its values (synonyms that must agree).
var describeConflicts = map[string][]string{"blur.mode": {"type"}, "blur.type": {"mode"}}

// sample returns a valid value for p: its default, its minimum, its first
// allowed value, or a type-appropriate one.
func sample(transformation string, p ParamDesc) string {
	if s, ok := describeSamples[transformation+"."+p.Name]; ok {
		return s
	}
	switch {
	case p.Default != nil:
		return fmt.Sprint(p.Default)
	case p.Min != nil:
		return formatBound(p, *p.Min)
	case len(p.Values) > 0:
		return p.Values[0]
	case p.Type == ParamColor:
		return "ff0000"
	}
	return "x"
}

func formatBound(p ParamDesc, v float64) string {
	if p.Type == ParamInt {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprint(v)
}

// TestDescriptionsMatchParsers checks every native transformation's
// description against its parser, so the two cannot drift apart: all
// described parameters together are accepted; an undescribed one is
// rejected; each parameter the parser asks for is described; a missing
// required parameter, a value out of range and a value outside an enum are
// rejected; both bounds and every enum value are accepted.
func TestDescriptionsMatchParsers(t *testing.T) {
	r := NewRegistry()
	descs := r.Describe()
	if len(descs) != len(builtins) {
		t.Fatalf("Describe lists %d transformations, %d are registered", len(descs), len(builtins))
	}
	for _, d := range descs {
		t.Run(d.Name, func(t *testing.T) {
			tr, _ := r.Lookup(d.Name)
			if _, ok := tr.(Describer); !ok {
				t.Fatal("does not implement Describer")
			}
			if d.Kind != "native" || d.Description == "" {
				t.Fatalf("kind %q, description %q: want native and a sentence", d.Kind, d.Description)
			}
			full := map[string]string{}
			described := map[string]bool{}
			for _, p := range d.Params {
				if described[p.Name] {
					t.Fatalf("parameter %s described twice", p.Name)
				}
				described[p.Name] = true
				full[p.Name] = sample(d.Name, p)
			}
			parse := func(vals map[string]string) (*Params, error) {
				p := NewParams(d.Name, maps.Clone(vals))
				_, err := tr.Parse(p)
				return p, err
			}
			with := func(name, value string) map[string]string {
				v := maps.Clone(full)
				for _, c := range describeConflicts[d.Name+"."+name] {
					delete(v, c)
				}
				v[name] = value
				return v
			}
			p, err := parse(full)
			if err != nil {
				t.Fatalf("every described parameter %v: %v", full, err)
			}
			for name := range p.used {
				if !described[name] {
					t.Errorf("the parser reads %q, which is not described", name)
				}
			}
			if _, err := parse(with("undescribedParameter", "1")); err == nil {
				t.Error("an undescribed parameter was accepted")
			}
			for _, pd := range d.Params {
				if pd.Required {
					v := maps.Clone(full)
					delete(v, pd.Name)
					if _, err := parse(v); err == nil {
						t.Errorf("%s is described as required but may be left out", pd.Name)
					}
				}
				if pd.Min != nil && pd.Max != nil {
					for _, b := range []float64{*pd.Min, *pd.Max} {
						if _, err := parse(with(pd.Name, formatBound(pd, b))); err != nil {
							t.Errorf("%s=%v (a bound): %v", pd.Name, b, err)
						}
					}
					for _, b := range []float64{*pd.Min - 1, *pd.Max + 1} {
						if _, err := parse(with(pd.Name, formatBound(pd, b))); err == nil {
							t.Errorf("%s=%v (out of range) was accepted", pd.Name, b)
						}
					}
				}
				for _, v := range pd.Values {
					if _, err := parse(with(pd.Name, v)); err != nil {
						t.Errorf("%s=%s (an allowed value): %v", pd.Name, v, err)
					}
				}
				if pd.Type == ParamColor {
					_, err := parse(with(pd.Name, "none"))
					if says := strings.Contains(pd.Description, "none"); says != (err == nil) {
						t.Errorf("%s: the description mentions none: %v, the parser accepts none: %v", pd.Name, says, err == nil)
					}
				}
				bad := map[ParamType]string{ParamEnum: "not-a-value", ParamColor: "zzz", ParamInt: "1.5", ParamNumber: "abc"}
				if b, ok := bad[pd.Type]; ok {
					if _, err := parse(with(pd.Name, b)); err == nil {
						t.Errorf("%s=%s (not a %s) was accepted", pd.Name, b, pd.Type)
					}
				}
			}
		})
	}
}
