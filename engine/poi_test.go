package engine

import (
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"testing"
)

// TestParsePOI covers the one parser of metadata points of interest: the
// shapes it accepts, what it rejects, and its rounding (half away from zero).
func TestParsePOI(t *testing.T) {
	t.Parallel()
	type m = map[string]any
	for _, tc := range []struct {
		name string
		in   any
		want POI
		ok   bool
	}{
		{"centre", m{"cx": 10.0, "cy": 20.0}, POI{X: 10, Y: 20}, true},
		{"point x y", m{"x": 5, "y": 6}, POI{X: 5, Y: 6}, true},
		{"box", m{"x": 1, "y": 2, "width": 30, "height": 40}, POI{X: 1, Y: 2, W: 30, H: 40, Box: true}, true},
		{"empty box", m{"x": 1, "y": 2, "width": 0, "height": 0}, POI{X: 1, Y: 2, Box: true}, true},
		{"centre wins over box", m{"cx": 7, "cy": 8, "x": 1, "y": 2, "width": 3, "height": 4}, POI{X: 7, Y: 8}, true},
		{"half centre cx but box", m{"cx": 7, "x": 1, "y": 2, "width": 3, "height": 4}, POI{X: 1, Y: 2, W: 3, H: 4, Box: true}, true},
		{"int64 float32", m{"x": int64(3), "y": float32(4.5)}, POI{X: 3, Y: 5}, true},
		{"json.Number", m{"cx": json.Number("12.5"), "cy": json.Number("3")}, POI{X: 13, Y: 3}, true},
		{"numeric strings", m{"cx": " 12 ", "cy": "1e1"}, POI{X: 12, Y: 10}, true},
		{"negative point", m{"x": -4, "y": -0.4}, POI{X: -4, Y: 0}, true},

		{"round half up", m{"cx": 10.5, "cy": 0.5}, POI{X: 11, Y: 1}, true},
		{"round down", m{"cx": 10.49, "cy": 10.4999}, POI{X: 10, Y: 10}, true},
		{"round half away from zero", m{"cx": -10.5, "cy": -0.5}, POI{X: -11, Y: -1}, true},
		{"box sizes rounded", m{"x": 0.4, "y": 0.6, "width": 2.5, "height": 2.49}, POI{X: 0, Y: 1, W: 3, H: 2, Box: true}, true},
		{"largest coordinate", m{"cx": float64(1 << 30), "cy": 0}, POI{X: 1 << 30}, true},

		{"nil", nil, POI{}, false},
		{"not an object", "10,20", POI{}, false},
		{"empty object", m{}, POI{}, false},
		{"label only", m{"label": "face"}, POI{}, false},
		{"x without y", m{"x": 1}, POI{}, false},
		{"only width", m{"x": 1, "y": 2, "width": 3}, POI{}, false},
		{"negative width", m{"x": 1, "y": 2, "width": -3, "height": 4}, POI{}, false},
		{"non-numeric", m{"cx": "left", "cy": 2}, POI{}, false},
		{"number with unit", m{"cx": "12px", "cy": "3"}, POI{}, false},
		{"bool", m{"cx": true, "cy": 2}, POI{}, false},
		{"NaN", m{"cx": math.NaN(), "cy": 2}, POI{}, false},
		{"infinity", m{"x": 1, "y": math.Inf(1)}, POI{}, false},
		{"too large", m{"cx": 1e12, "cy": 2}, POI{}, false},
		{"bad json.Number", m{"cx": json.Number("x"), "cy": 2}, POI{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parsePOI(tc.in)
			if ok != tc.ok || got != tc.want {
				t.Errorf("parsePOI(%v) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParsePOIParam(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want POI
		ok   bool
	}{
		{"10,20", POI{X: 10, Y: 20}, true},
		{" 10 , 20 ", POI{X: 10, Y: 20}, true},
		{"10.5,20.49", POI{X: 11, Y: 20}, true},
		{"1,2,3", POI{X: 1, Y: 2}, true},
		{"5", POI{}, false},
		{"a,b", POI{}, false},
		{"1,NaN", POI{}, false},
		{"1,Inf", POI{}, false},
		{"", POI{}, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := parsePOIParam(tc.in)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Errorf("parsePOIParam(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestMetadataPOIs(t *testing.T) {
	t.Parallel()
	meta := map[string]any{"poi": []any{
		map[string]any{"cx": 1, "cy": 2},
		"junk",
		map[string]any{"x": 3, "y": 4, "width": 5, "height": 6},
	}}
	got := metadataPOIs(meta)
	want := []POI{{X: 1, Y: 2}, {X: 3, Y: 4, W: 5, H: 6, Box: true}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("metadataPOIs = %v, want %v", got, want)
	}
	for _, m := range []map[string]any{nil, {"poi": "x"}, {"poi": []any{}}} {
		if got := metadataPOIs(m); len(got) != 0 {
			t.Errorf("metadataPOIs(%v) = %v, want none", m, got)
		}
	}
}

// TestPOIRoundingShared checks that smartSize and gravity=faces place a
// fractional metadata POI where the same POI rounded by parsePOI lies (smartSize
// used to truncate, gravity to keep fractions).
func TestPOIRoundingShared(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := source(t, 160, 120, "png", false)
	frac := Env{Metadata: map[string]any{"poi": []any{map[string]any{"cx": 60.5, "cy": 40.5}}}}
	for _, tc := range []struct{ name, frac, whole string }{
		{"smartSize", "smartSize:width=20,height=20,crop=close", "smartSize:width=20,height=20,crop=close,poi=61,41"},
		{"faces", "crop:width=21,height=21,gravity=faces", "crop:width=21,height=21,x=51,y=31"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, e, src, "png", frac, tc.frac)
			want := run(t, e, src, "png", Env{}, tc.whole)
			if mae, _ := compare(decodeRGBA(t, want.Data), decodeRGBA(t, got.Data)); mae != 0 {
				t.Errorf("%s at (60.5, 40.5) differs from (61, 41): error %.2f", tc.frac, mae)
			}
		})
	}
}

// TestDrawPoisPointXY: a point written {x, y} is drawn as a circle, as
// {cx, cy} is (it used to be skipped).
func TestDrawPoisPointXY(t *testing.T) {
	t.Parallel()
	white, blue := fxRGBA(255, 255, 255, 255), fxRGBA(0, 0, 255, 255)
	s := fxState(t, fxSolid(80, 60, white))
	s.Env.Metadata = map[string]any{"poi": []any{map[string]any{"x": 40, "y": 30}}}
	if err := fxRun(t, s, "drawPois:color=00f,borderSize=2,pointSize=7"); err != nil {
		t.Fatal(err)
	}
	assertPixels(t, fxPixels(t, s), []struct {
		x, y int
		want color.NRGBA
	}{{50, 30, blue}, {40, 20, blue}, {40, 30, white}})
}
