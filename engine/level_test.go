package engine

import (
	"image/color"
	"testing"
)

func TestLevelParse(t *testing.T) {
	fxCheckParse(t, "level", []fxCase{
		{"defaults", nil, nil},
		{"all", fxP("channel", "all", "amount", "50"), nil},
		{"letters", fxP("channel", "rgbk", "amount", "-100"), nil},
		{"zero", fxP("amount", "0"), nil},
		{"bad letter", fxP("channel", "rx"), []string{"channel"}},
		{"empty channel", fxP("channel", ""), []string{"channel"}},
		{"amount high", fxP("amount", "101"), []string{"amount", "between"}},
		{"amount low", fxP("amount", "-101"), []string{"amount"}},
		{"amount text", fxP("amount", "abc"), []string{"amount"}},
		{"unknown", fxP("gamma", "2"), []string{"Unknown parameter", "gamma"}},
	})
}

func TestLevelGamma(t *testing.T) {
	for amount, want := range map[int]float64{1: 1, 0: 1, 10: 1, 11: 2, 20: 2, 91: 10, 100: 10, -50: 0.5, -100: 0} {
		if got := levelGamma(amount); got != want {
			t.Errorf("levelGamma(%d) = %g, want %g", amount, got, want)
		}
	}
}

// TestLevelBehat is Imbo's pixel check: #3f3f3f, red, 100 -> #de3f3f.
func TestLevelBehat(t *testing.T) {
	s := fxState(t, fxSolid(8, 8, fxRGBA(0x3f, 0x3f, 0x3f, 255)))
	if err := fxRun(t, s, "level:channel=r,amount=100"); err != nil {
		t.Fatal(err)
	}
	if got := fxPixels(t, s).NRGBAAt(4, 4); !fxNear(got, fxRGBA(0xde, 0x3f, 0x3f, 255), 1) {
		t.Fatalf("got %v, want #de3f3f", got)
	}
}

func TestLevelGolden(t *testing.T) {
	for name, spec := range map[string]string{
		"level_all_50":    "level:amount=50",
		"level_gb_neg60":  "level:channel=gb,amount=-60",
		"level_alpha_all": "level:amount=100",
	} {
		t.Run(name, func(t *testing.T) {
			src := fxCard()
			if name == "level_alpha_all" {
				src = fxWithAlpha(src)
			}
			s := fxState(t, src)
			if err := fxRun(t, s, spec); err != nil {
				t.Fatal(err)
			}
			assertGolden(t, name, fxPNG(t, s), 1)
		})
	}
}

// TestLevelAlpha: channel all is Imagick's CHANNEL_ALL, which levels alpha
// as well (0.5 -> 0.5^(1/5) = 0.87 at amount 50); named channels leave it.
func TestLevelAlpha(t *testing.T) {
	for _, c := range []struct {
		spec string
		want color.NRGBA
	}{
		{"level:amount=50", fxRGBA(223, 223, 223, 223)},
		{"level:channel=rgb,amount=50", fxRGBA(223, 223, 223, 128)},
	} {
		t.Run(c.spec, func(t *testing.T) {
			s := fxState(t, fxSolid(8, 8, fxRGBA(128, 128, 128, 128)))
			if err := fxRun(t, s, c.spec); err != nil {
				t.Fatal(err)
			}
			if got := fxPixels(t, s).NRGBAAt(4, 4); !fxNear(got, c.want, 1) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}
