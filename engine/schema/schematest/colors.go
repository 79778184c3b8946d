// Package schematest is the conformance table of package schema's colour
// syntax: the engine, the filters and the admin UI each run it through
// their own entry point, so that all three accept and refuse the same
// inputs.
package schematest

import "testing"

// ColorCase is one input of the colour syntax.
type ColorCase struct {
	In string
	// AllowNone runs the case where `none` is allowed (engine parameters
	// declared with it); parsers without `none` skip these cases.
	AllowNone bool
	// Hex is the colour as rrggbbaa, "" when In is refused.
	Hex string
}

// ColorCases is the table.
var ColorCases = []ColorCase{
	{In: "fff", Hex: "ffffffff"},
	{In: "#0a9", Hex: "00aa99ff"},
	{In: "F0c", Hex: "ff00ccff"},
	{In: "ff0000", Hex: "ff0000ff"},
	{In: "#12AbEf", Hex: "12abefff"},
	{In: "#A0b1C2", Hex: "a0b1c2ff"},
	{In: "11223344", Hex: "11223344"},
	{In: "#FFFFFF00", Hex: "ffffff00"},
	{In: "none", AllowNone: true, Hex: "00000000"},
	{In: "NONE", AllowNone: true, Hex: "00000000"},
	{In: "transparent", AllowNone: true, Hex: "00000000"},
	{In: "000000", AllowNone: true, Hex: "000000ff"},
	{In: "#none", AllowNone: true},
	{In: "", AllowNone: true},
	{In: "none"},
	{In: "transparent"},
	{In: ""},
	{In: "#"},
	{In: "ff"},
	{In: "ffff"},
	{In: "fffff"},
	{In: "fffffff"},
	{In: "fffffffff"},
	{In: "##fff"},
	{In: "ggg"},
	{In: "12345g"},
	{In: " fff"},
	{In: "fff "},
	{In: "+ff"},
	{In: "0xfff"},
	{In: "f_f"},
	{In: "red"},
	{In: "fféé"},
	{In: "#a0b1c2\""},
	{In: "ffffffffffffffffffffffffffffffff"},
}

// TestColors runs every case through parse, which returns the colour as
// rrggbbaa and whether it was accepted. A parser that does not take
// `none` (withNone false) skips the cases that allow it.
func TestColors(t *testing.T, withNone bool, parse func(s string, allowNone bool) (hex string, ok bool)) {
	t.Helper()
	for _, tc := range ColorCases {
		if tc.AllowNone && !withNone {
			continue
		}
		t.Run(tc.In, func(t *testing.T) {
			hex, ok := parse(tc.In, tc.AllowNone)
			if !ok {
				hex = ""
			}
			if hex != tc.Hex {
				t.Errorf("%q (none allowed: %v) = %q, %v; want %q", tc.In, tc.AllowNone, hex, ok, tc.Hex)
			}
		})
	}
}
