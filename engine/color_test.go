package engine

import (
	"strings"
	"testing"
)

// TestParseColor pins the one colour syntax: hex of 3, 6 or 8 digits,
// optional '#', either case, and none (or transparent) only where allowed.
func TestParseColor(t *testing.T) {
	t.Parallel()
	opaque := func(r, g, b uint8) Color { return Color{R: r, G: g, B: b, A: 255} }
	for _, tc := range []struct {
		in        string
		allowNone bool
		want      Color
		ok        bool
	}{
		{"fff", false, opaque(255, 255, 255), true},
		{"#0a9", false, opaque(0x00, 0xaa, 0x99), true},
		{"F0c", false, opaque(0xff, 0x00, 0xcc), true},
		{"ff0000", false, opaque(255, 0, 0), true},
		{"#12AbEf", false, opaque(0x12, 0xab, 0xef), true},
		{"000000", true, opaque(0, 0, 0), true},
		{"11223344", false, Color{R: 0x11, G: 0x22, B: 0x33, A: 0x44}, true},
		{"#FFFFFF00", false, Color{R: 255, G: 255, B: 255, A: 0}, true},
		{"abcdef80", true, Color{R: 0xab, G: 0xcd, B: 0xef, A: 0x80}, true},
		{"none", true, Color{}, true},
		{"NONE", true, Color{}, true},
		{"transparent", true, Color{}, true},
		{"Transparent", true, Color{}, true},

		{"none", false, Color{}, false},
		{"transparent", false, Color{}, false},
		{"#none", true, Color{}, false},
		{"", false, Color{}, false},
		{"", true, Color{}, false},
		{"#", false, Color{}, false},
		{"ff", false, Color{}, false},
		{"ffff", false, Color{}, false},
		{"fffff", false, Color{}, false},
		{"fffffff", false, Color{}, false},
		{"fffffffff", false, Color{}, false},
		{"##fff", false, Color{}, false},
		{"ggg", false, Color{}, false},
		{"12345g", false, Color{}, false},
		{" fff", false, Color{}, false},
		{"fff ", false, Color{}, false},
		{"+ff", false, Color{}, false},
		{"0xfff", false, Color{}, false},
		{"f_f", false, Color{}, false},
		{"red", false, Color{}, false},
		{"fféé", false, Color{}, false},
		{strings.Repeat("f", 100), false, Color{}, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseColor(tc.in, tc.allowNone)
			if ok != tc.ok || got != tc.want {
				t.Errorf("ParseColor(%q, %v) = %+v, %v; want %+v, %v", tc.in, tc.allowNone, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestParamsColor: a parameter's surrounding spaces are ignored, as for
// numbers, and an invalid value fails naming the parameter.
func TestParamsColor(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	for _, tc := range []struct{ spec, err string }{
		{"border:color= 0f0 ", ""},
		{"border:color=11223344", ""},
		{"border:color=1122334", "color"},
		{"border:color=none", "color"},
		{"canvas:width=10,height=10,bg=None", ""},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := e.ParseChain([]string{tc.spec})
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("ParseChain(%q) = %v, want error containing %q", tc.spec, err, tc.err)
			}
		})
	}
}
