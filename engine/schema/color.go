package schema

import (
	"fmt"
	"strings"
)

// Color is an sRGB colour. A is its opacity: 255 for every colour of 3 or
// 6 digits, 0 for `none`, or the last two digits of an 8-digit colour.
type Color struct{ R, G, B, A uint8 }

// ParseColor parses vitrine's one colour syntax: hexadecimal `rgb` (each
// digit doubled), `rrggbb` or `rrggbbaa`, with or without a leading `#`,
// digits in either case; and, when allowNone is set, `none` (or its
// synonym `transparent`, in any case) for transparent black, Color{}.
// Nothing else is accepted: no other digit count, no surrounding spaces,
// no signs or separators.
func ParseColor(s string, allowNone bool) (Color, bool) {
	if allowNone && (strings.EqualFold(s, "none") || strings.EqualFold(s, "transparent")) {
		return Color{}, true
	}
	s = strings.TrimPrefix(s, "#")
	if len(s) != 3 && len(s) != 6 && len(s) != 8 {
		return Color{}, false
	}
	var v [8]byte
	for i := range len(s) {
		d, ok := hexDigit(s[i])
		if !ok {
			return Color{}, false
		}
		v[i] = d
	}
	switch len(s) {
	case 3:
		return Color{R: v[0] * 17, G: v[1] * 17, B: v[2] * 17, A: 255}, true
	case 6:
		return Color{R: v[0]<<4 | v[1], G: v[2]<<4 | v[3], B: v[4]<<4 | v[5], A: 255}, true
	}
	return Color{R: v[0]<<4 | v[1], G: v[2]<<4 | v[3], B: v[4]<<4 | v[5], A: v[6]<<4 | v[7]}, true
}

// hexDigit returns the value of one hexadecimal digit, either case.
func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Hex returns the colour as lower-case `rrggbbaa`, the form a guest reads
// a colour parameter in (wasm-sdk/ABI.md).
func (c Color) Hex() string { return fmt.Sprintf("%02x%02x%02x%02x", c.R, c.G, c.B, c.A) }
