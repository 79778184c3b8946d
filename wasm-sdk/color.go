package vitrine

import (
	"fmt"
	"image/color"
	"strings"
)

// ParseColor parses a colour as vitrine writes it: hexadecimal "rgb",
// "rrggbb" or "rrggbbaa", with or without a leading "#", in either case.
// Colour parameters always reach the guest as "rrggbbaa"; the other forms are
// accepted so that colours in settings can be written as people write them.
// A colour without alpha is opaque.
func ParseColor(s string) (color.NRGBA, error) {
	h := strings.TrimPrefix(s, "#")
	var digits [8]byte
	switch len(h) {
	case 3:
		for i := range 3 {
			digits[2*i], digits[2*i+1] = h[i], h[i]
		}
		digits[6], digits[7] = 'f', 'f'
	case 6:
		copy(digits[:], h)
		digits[6], digits[7] = 'f', 'f'
	case 8:
		copy(digits[:], h)
	default:
		return color.NRGBA{}, fmt.Errorf("vitrine: colour %q: want rgb, rrggbb or rrggbbaa hexadecimal: %w", s, ErrInvalid)
	}
	var c [4]uint8
	for i := range c {
		hi, ok1 := hexDigit(digits[2*i])
		lo, ok2 := hexDigit(digits[2*i+1])
		if !ok1 || !ok2 {
			return color.NRGBA{}, fmt.Errorf("vitrine: colour %q: not hexadecimal: %w", s, ErrInvalid)
		}
		c[i] = hi<<4 | lo
	}
	return color.NRGBA{R: c[0], G: c[1], B: c[2], A: c[3]}, nil
}

func hexDigit(b byte) (uint8, bool) {
	switch {
	case '0' <= b && b <= '9':
		return b - '0', true
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10, true
	case 'A' <= b && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}
