package vitrine

import (
	"errors"
	"image/color"
	"testing"
)

func TestParseColor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want color.NRGBA
	}{
		{"336699cc", color.NRGBA{0x33, 0x66, 0x99, 0xcc}},
		{"336699", color.NRGBA{0x33, 0x66, 0x99, 0xff}},
		{"#336699", color.NRGBA{0x33, 0x66, 0x99, 0xff}},
		{"369", color.NRGBA{0x33, 0x66, 0x99, 0xff}},
		{"#fff", color.NRGBA{0xff, 0xff, 0xff, 0xff}},
		{"AbCdEf00", color.NRGBA{0xab, 0xcd, 0xef, 0x00}},
		{"00000000", color.NRGBA{}},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseColor(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("ParseColor(%q) = %v, want %v", c.in, got, c.want)
			}
		})
	}
	for _, in := range []string{"", "#", "12", "1234", "12345", "1234567", "123456789", "gggggg", "12 456", "##123456", "red"} {
		t.Run("invalid "+in, func(t *testing.T) {
			t.Parallel()
			if got, err := ParseColor(in); !errors.Is(err, ErrInvalid) {
				t.Errorf("ParseColor(%q) = %v, %v; want ErrInvalid", in, got, err)
			}
		})
	}
}
