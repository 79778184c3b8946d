package engine

import (
	"image/color"
	"testing"
)

// TestModulateHSL checks modulate against ImageMagick's ModulateHSL worked
// out by hand: RGB -> HSL, L x b, S x s, hue + (h-100) x 1.8 degrees, back.
func TestModulateHSL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   color.NRGBA
		spec string
		want color.NRGBA
	}{
		// (200, 40, 40): H 0, S 2/3, L 0.47, C 0.627.
		{"hue +180", color.NRGBA{200, 40, 40, 255}, "modulate:h=200", color.NRGBA{40, 200, 200, 255}},
		{"hue -180", color.NRGBA{200, 40, 40, 255}, "modulate:h=0", color.NRGBA{40, 200, 200, 255}},
		// h=150 is +90 degrees: hue 90 (chartreuse-green), same S and L.
		{"hue +90", color.NRGBA{200, 40, 40, 255}, "modulate:h=150", color.NRGBA{120, 200, 40, 255}},
		// S x 0.5: S 1/3, L 0.47 -> C = 0.3137, max 0.6275 (160), min 0.3137 (80).
		{"saturation half", color.NRGBA{200, 40, 40, 255}, "modulate:s=50", color.NRGBA{160, 80, 80, 255}},
		// L x 1.5 = 0.706: C = (2 - 2L) S = 0.392; max 0.902 (230), min 0.510 (130).
		{"brighter", color.NRGBA{200, 40, 40, 255}, "modulate:b=150", color.NRGBA{230, 130, 130, 255}},
		// L x 0.5 = 0.235: C = 2 L S = 0.3137; max 0.392 (100), min 0.078 (20).
		{"darker", color.NRGBA{200, 40, 40, 255}, "modulate:b=50", color.NRGBA{100, 20, 20, 255}},
		// S x 2 clips: C = 2L S' = 1.255; min L - C/2 < 0 -> 0, max > 1 -> 255.
		{"oversaturated", color.NRGBA{200, 40, 40, 255}, "modulate:s=200", color.NRGBA{255, 0, 0, 255}},
		{"grey stays grey", color.NRGBA{90, 90, 90, 255}, "modulate:h=140,s=300", color.NRGBA{90, 90, 90, 255}},
		{"alpha kept", color.NRGBA{40, 200, 40, 128}, "modulate:h=200", color.NRGBA{200, 40, 200, 128}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := fxState(t, fxSolid(4, 4, c.in))
			if err := fxRun(t, s, c.spec); err != nil {
				t.Fatal(err)
			}
			if got := fxPixels(t, s).NRGBAAt(1, 1); !near(got, c.want, 1) {
				t.Errorf("%v %s = %v, want %v", c.in, c.spec, got, c.want)
			}
		})
	}
}
