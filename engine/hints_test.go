package engine

import (
	"strconv"
	"strings"
	"testing"
)

func TestHints(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{Presets: map[string][]string{"card": {"thumbnail:width=100,height=50", "desaturate"}}})
	for _, tc := range []struct {
		name string
		ts   []string
		h    Hints
		key  string
		used HintsUsed
		err  string
	}{
		{"dpr parameter", []string{"thumbnail:width=200,height=100,dpr=2"}, Hints{}, "thumbnail:height=200,width=400", HintsUsed{}, ""},
		{"same as the device size", []string{"thumbnail:width=400,height=200"}, Hints{}, "thumbnail:height=200,width=400", HintsUsed{}, ""},
		{"parameter wins over the hint", []string{"resize:width=100,dpr=1.5"}, Hints{DPR: 3}, "resize:width=150", HintsUsed{}, ""},
		{"hint without parameter", []string{"maxSize:width=100,height=80"}, Hints{DPR: 2}, "maxSize:height=160,width=200", HintsUsed{DPR: true}, ""},
		{"crop offsets", []string{"crop:width=10,height=10,x=5,y=6,dpr=2"}, Hints{}, "crop:height=20,width=20,x=10,y=12", HintsUsed{}, ""},
		{"smartSize", []string{"smartSize:width=10,height=10,dpr=3"}, Hints{}, "smartSize:height=30,width=30", HintsUsed{}, ""},
		{"width auto", []string{"resize:width=auto"}, Hints{Width: 500, DPR: 2}, "resize:width=500", HintsUsed{DPR: true, Width: true}, ""},
		{"width auto with height", []string{"maxSize:width=auto,height=100,dpr=2"}, Hints{Width: 300}, "maxSize:height=200,width=300", HintsUsed{Width: true}, ""},
		{"not a sizing step", []string{"desaturate"}, Hints{DPR: 2, Width: 300}, "desaturate", HintsUsed{}, ""},
		{"preset takes dpr", []string{"card:dpr=2"}, Hints{}, "thumbnail:height=100,width=200|desaturate", HintsUsed{}, ""},
		{"dpr too large", []string{"thumbnail:width=10,dpr=5"}, Hints{}, "", HintsUsed{}, "thumbnail: dpr must be a number between 1 and 4, got \"5\""},
		{"dpr below 1", []string{"resize:width=10,dpr=0.5"}, Hints{}, "", HintsUsed{}, "resize: dpr must be a number between 1 and 4"},
		{"dpr not a number", []string{"crop:width=10,height=10,dpr=x"}, Hints{}, "", HintsUsed{}, "crop: dpr must be a number"},
		{"auto without hints", []string{"resize:width=auto"}, Hints{}, "", HintsUsed{}, "resize: width=auto needs client hints (clientHints.enabled)"},
		{"auto on thumbnail", []string{"thumbnail:width=auto"}, Hints{Width: 100}, "", HintsUsed{}, "thumbnail: width=auto is taken by resize and maxSize only"},
		{"dpr on another step", []string{"desaturate:dpr=2"}, Hints{}, "", HintsUsed{}, "Unknown parameter"},
		{"dpr rounded up to a step", []string{"resize:width=100,dpr=2.625"}, Hints{}, "resize:width=300", HintsUsed{}, ""},
		{"hint rounded up to a step", []string{"resize:width=200"}, Hints{DPR: 1.01}, "resize:width=300", HintsUsed{DPR: true}, ""},
		{"configured steps", []string{"resize:width=100,dpr=1.2"}, Hints{DPRSteps: []float64{1, 1.25, 4}}, "resize:width=125", HintsUsed{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := e.ParseChainHints(tc.ts, tc.h)
			if tc.err != "" {
				if err == nil || KindOf(err) != KindInvalid || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want a 400 containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Key() != tc.key || c.HintsUsed() != tc.used {
				t.Errorf("key %q used %+v, want %q %+v", c.Key(), c.HintsUsed(), tc.key, tc.used)
			}
		})
	}
	// The output is in device pixels.
	res := run(t, e, source(t, 640, 480, "png", false), "png", Env{}, "thumbnail:width=100,height=50,dpr=2")
	if res.Width != 200 || res.Height != 100 {
		t.Errorf("dpr=2 thumbnail: %dx%d, want 200x100", res.Width, res.Height)
	}
}

// TestHintsStepped: 1,000 distinct ratios, as the parameter and as the
// hint, give at most one variant per step of DefaultDPRSteps.
func TestHintsStepped(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	keys := map[string]bool{}
	for i := range 1000 {
		dpr := 1 + 3*float64(i)/999
		for _, h := range []struct {
			ts []string
			h  Hints
		}{
			{[]string{"thumbnail:width=200,height=100,dpr=" + strconv.FormatFloat(dpr, 'f', -1, 64)}, Hints{}},
			{[]string{"thumbnail:width=200,height=100"}, Hints{DPR: dpr}},
		} {
			c, err := e.ParseChainHints(h.ts, h.h)
			if err != nil {
				t.Fatalf("dpr %v: %v", dpr, err)
			}
			keys[c.Key()] = true
		}
	}
	if len(keys) != len(DefaultDPRSteps) {
		t.Errorf("%d variants from 1,000 ratios, want %d (one per step): %v", len(keys), len(DefaultDPRSteps), keys)
	}
}
