package engine

import (
	"fmt"
	"maps"
	"testing"
)

// describeSamples are valid values for string parameters whose format the
// description states only in words.
var describeSamples = map[string]string{"smartSize.poi": "10,20", "compress.level": "auto"}

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
		if p.Type == ParamInt {
			return fmt.Sprint(int64(*p.Min))
		}
		return fmt.Sprint(*p.Min)
	case len(p.Values) > 0:
		return p.Values[0]
	case p.Type == ParamColor:
		return "ff0000"
	}
	return "x"
}

// TestDeclaredParameters parses every native transformation with every
// declared parameter at once (a parser that reads a parameter it did not
// declare panics here), checks that an undeclared parameter and a missing
// required one are refused, and that each describes itself in a sentence.
// Bounds, defaults and allowed values come from the declaration itself
// (TestParamsFromDeclaration).
func TestDeclaredParameters(t *testing.T) {
	r := NewRegistry()
	descs := r.Describe()
	if len(descs) != len(builtins) {
		t.Fatalf("Describe lists %d transformations, %d are registered", len(descs), len(builtins))
	}
	for _, d := range descs {
		t.Run(d.Name, func(t *testing.T) {
			tr, _ := r.Lookup(d.Name)
			if d.Kind != "native" || d.Description == "" {
				t.Fatalf("kind %q, description %q: want native and a sentence", d.Kind, d.Description)
			}
			full := map[string]string{}
			for _, p := range d.Params {
				full[p.Name] = sample(d.Name, p)
			}
			// blur's type and mode are synonyms that must agree.
			if d.Name == "blur" {
				full["mode"] = full["type"]
			}
			parse := func(vals map[string]string) error {
				_, err := tr.Parse(NewParams(d.Name, maps.Clone(vals)))
				return err
			}
			if err := parse(full); err != nil {
				t.Fatalf("every declared parameter %v: %v", full, err)
			}
			v := maps.Clone(full)
			v["undeclaredParameter"] = "1"
			if err := parse(v); err == nil {
				t.Error("an undeclared parameter was accepted")
			}
			for _, pd := range d.Params {
				if pd.Required {
					v := maps.Clone(full)
					delete(v, pd.Name)
					if err := parse(v); err == nil {
						t.Errorf("%s is declared as required but may be left out", pd.Name)
					}
				}
			}
		})
	}
}

// TestParamsFromDeclaration: the getters take bounds, allowed values,
// defaults, "required" and "none" from the declaration.
func TestParamsFromDeclaration(t *testing.T) {
	tr := describe(func(p *Params) (Step, error) {
		p.Int("i")
		p.Float("f")
		p.Enum("e")
		p.Enum("o")
		p.Color("c")
		p.Color("n")
		p.Int("r")
		return nil, p.Err()
	}, "Test.",
		intParam("i", -2, 3, "").def(1),
		numParam("f", 0, 0.5, "").def(0.25),
		enumParam("e", []string{"a", "b"}, "").def("a"),
		enumParam("o", []string{"x"}, ""),
		colorParam("c", "").def("000"),
		colorParam("n", "").def("none").orNone(),
		intParam("r", 0, 9, "").required(),
	)
	for _, c := range []struct {
		vals string
		ok   bool
	}{
		{"r=0", true},
		{"", false},
		{"r=10", false},
		{"r=0,i=-2", true}, {"r=0,i=3", true}, {"r=0,i=-3", false}, {"r=0,i=4", false}, {"r=0,i=1.5", false},
		{"r=0,f=0", true}, {"r=0,f=0.5", true}, {"r=0,f=0.6", false}, {"r=0,f=abc", false},
		{"r=0,e=b", true}, {"r=0,e=c", false}, {"r=0,e=", false},
		{"r=0,o=x", true}, {"r=0,o=", true}, {"r=0,o=y", false},
		{"r=0,c=fff", true}, {"r=0,c=none", false}, {"r=0,c=zzz", false},
		{"r=0,n=none", true}, {"r=0,n=123456", true},
	} {
		sp := ParseSpec("t:" + c.vals)
		_, err := tr.Parse(NewParams("t", sp.Params))
		if (err == nil) != c.ok {
			t.Errorf("%q: err = %v, want ok %v", c.vals, err, c.ok)
		}
	}
	p := NewParams("t", nil)
	p.decl = tr.(described).decl
	if p.Int("i") != 1 || p.Float("f") != 0.25 || p.Enum("e") != "a" || p.Enum("o") != "" || p.Color("c") != (Color{A: 255}) {
		t.Error("defaults are not the declared ones")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a getter for an undeclared parameter did not panic")
			}
		}()
		p.Int("undeclared")
	}()
}
