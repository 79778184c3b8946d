package vitrine

import (
	"errors"
	"image/color"
	"testing"
)

func TestParams(t *testing.T) {
	t.Parallel()
	p := NewParams(map[string]string{
		"size":   "42",
		"offset": "-7",
		"mix":    "0.25",
		"big":    "1e+21",
		"on":     "true",
		"off":    "false",
		"dark":   "336699cc",
		"mode":   "soft",
	})
	check := func(t *testing.T, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("got %v, want %v", got, want)
		}
	}
	t.Run("int", func(t *testing.T) {
		v, err := p.Int("size")
		check(t, v, 42, err)
		v, err = p.Int("offset")
		check(t, v, -7, err)
	})
	t.Run("number", func(t *testing.T) {
		v, err := p.Number("mix")
		check(t, v, 0.25, err)
		v, err = p.Number("big")
		check(t, v, 1e21, err)
		v, err = p.Number("size")
		check(t, v, 42.0, err)
	})
	t.Run("bool", func(t *testing.T) {
		v, err := p.Bool("on")
		check(t, v, true, err)
		v, err = p.Bool("off")
		check(t, v, false, err)
	})
	t.Run("color", func(t *testing.T) {
		v, err := p.Color("dark")
		check(t, v, color.NRGBA{R: 0x33, G: 0x66, B: 0x99, A: 0xcc}, err)
	})
	t.Run("string", func(t *testing.T) {
		v, err := p.String("mode")
		check(t, v, "soft", err)
	})
	t.Run("has", func(t *testing.T) {
		if !p.Has("mode") || p.Has("nope") {
			t.Errorf("Has(mode) = %v, Has(nope) = %v", p.Has("mode"), p.Has("nope"))
		}
	})

	errs := []struct {
		name string
		get  func() error
		want error
	}{
		{"absent int", func() error { _, err := p.Int("nope"); return err }, ErrNotFound},
		{"absent color", func() error { _, err := p.Color("nope"); return err }, ErrNotFound},
		{"zero Params", func() error { _, err := Params{}.String("size"); return err }, ErrNotFound},
		{"number as int", func() error { _, err := p.Int("mix"); return err }, ErrInvalid},
		{"text as number", func() error { _, err := p.Number("mode"); return err }, ErrInvalid},
		{"text as bool", func() error { _, err := p.Bool("mode"); return err }, ErrInvalid},
		{"int as color", func() error { _, err := p.Color("size"); return err }, ErrInvalid},
	}
	for _, c := range errs {
		t.Run(c.name, func(t *testing.T) {
			if err := c.get(); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}
