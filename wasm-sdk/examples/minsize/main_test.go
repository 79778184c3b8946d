package main

import (
	"testing"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	l := limits{MinWidth: 200, MinHeight: 100}
	cases := []struct {
		name    string
		w, h    int
		refusal string
	}{
		{"large enough", 1920, 1080, ""},
		{"exactly the minimum", 200, 100, ""},
		{"too narrow", 199, 1080, "The image is 199x1080 pixels; images must be at least 200x100"},
		{"too short", 1920, 99, "The image is 1920x99 pixels; images must be at least 200x100"},
		{"both", 10, 10, "The image is 10x10 pixels; images must be at least 200x100"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tg, refusal := check(vitrine.ImageInfo{Width: c.w, Height: c.h, Mime: "image/png"}, l)
			if refusal != c.refusal {
				t.Errorf("refusal = %q, want %q", refusal, c.refusal)
			}
			want := tag{}
			if c.refusal == "" {
				want = tag{Checked: true, Width: c.w, Height: c.h, MinWidth: 200, MinHeight: 100}
			}
			if tg != want {
				t.Errorf("tag = %+v, want %+v", tg, want)
			}
		})
	}
}

// Without settings every image passes.
func TestCheckNoSettings(t *testing.T) {
	t.Parallel()
	if _, refusal := check(vitrine.ImageInfo{Width: 1, Height: 1}, limits{}); refusal != "" {
		t.Errorf("a 1x1 image was refused without settings: %q", refusal)
	}
}
