package engine

import (
	"image"
	"testing"
)

// TestGeometry checks the exact output sizes Imbo clients expect (resize
// rounds the free side up, maxSize rounds to nearest and never enlarges,
// thumbnail outbound is always exactly w x h, smartSize's crop formulas) on PNG
// sources (no shrink-on-load) and on JPEG sources four times larger (where
// the first step decodes with shrink-on-load): the geometry must not differ.
func TestGeometry(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	poi := Env{Metadata: map[string]any{"poi": []any{map[string]any{"x": 410.0, "y": 310.0}}}}
	tests := []struct {
		name       string
		w, h       int
		env        Env
		ts         []string
		wantW      int
		wantH      int
		bigW, bigH int // a larger JPEG source with the same expectation; 0 = none
	}{
		{name: "resize height", w: 599, h: 417, ts: []string{"resize:height=200"}, wantW: 288, wantH: 200},
		{name: "resize width", w: 599, h: 417, ts: []string{"resize:width=200"}, wantW: 200, wantH: 140},
		{name: "resize both", w: 599, h: 417, ts: []string{"resize:width=100,height=100"}, wantW: 100, wantH: 100},
		{name: "resize same", w: 599, h: 417, ts: []string{"resize:width=599,height=417"}, wantW: 599, wantH: 417},
		{name: "resize enlarge", w: 100, h: 50, ts: []string{"resize:width=300"}, wantW: 300, wantH: 150},
		{name: "maxSize height", w: 599, h: 417, ts: []string{"maxSize:height=200"}, wantW: 287, wantH: 200},
		{name: "maxSize width", w: 599, h: 417, ts: []string{"maxSize:width=200"}, wantW: 200, wantH: 139},
		{name: "maxSize box", w: 599, h: 417, ts: []string{"maxSize:width=100,height=100"}, wantW: 100, wantH: 70},
		{name: "maxSize never enlarges", w: 599, h: 417, ts: []string{"maxSize:width=1000"}, wantW: 599, wantH: 417},
		{name: "maxSize none", w: 599, h: 417, ts: []string{"maxSize"}, wantW: 599, wantH: 417},
		{name: "thumbnail inset 40", w: 599, h: 417, ts: []string{"thumbnail:width=40,height=40,fit=inset"}, wantW: 40, wantH: 28},
		{name: "thumbnail inset 10x70", w: 599, h: 417, ts: []string{"thumbnail:width=10,height=70,fit=inset"}, wantW: 10, wantH: 7},
		{name: "thumbnail default", w: 599, h: 417, ts: []string{"thumbnail"}, wantW: 50, wantH: 50},
		{name: "thumbnail outbound", w: 599, h: 417, ts: []string{"thumbnail:width=200,height=100"}, wantW: 200, wantH: 100},
		{name: "thumbnail outbound tall", w: 599, h: 417, ts: []string{"thumbnail:width=100,height=300"}, wantW: 100, wantH: 300},
		{name: "smartSize close", w: 1024, h: 768, env: poi, ts: []string{"smartSize:width=250,height=250,crop=close"}, wantW: 250, wantH: 250},
		{name: "smartSize medium wide", w: 1024, h: 768, env: poi, ts: []string{"smartSize:width=600,height=250"}, wantW: 600, wantH: 250},
		{name: "smartSize tall", w: 1024, h: 768, ts: []string{"smartSize:width=250,height=600,poi=410,310"}, wantW: 250, wantH: 600},
		{name: "smartSize no poi", w: 1024, h: 768, ts: []string{"smartSize:width=300,height=100"}, wantW: 300, wantH: 100},
		{name: "border outbound", w: 512, h: 512, ts: []string{"border:height=100,width=0"}, wantW: 512, wantH: 712},
		{name: "border default", w: 100, h: 50, ts: []string{"border"}, wantW: 102, wantH: 52},
		{name: "border inline", w: 512, h: 512, ts: []string{"border:width=100,height=100,mode=inline"}, wantW: 512, wantH: 512},
		{name: "canvas grow", w: 100, h: 50, ts: []string{"canvas:width=200,height=200,mode=center"}, wantW: 200, wantH: 200},
		{name: "canvas shrink", w: 100, h: 50, ts: []string{"canvas:width=40,height=30,mode=center"}, wantW: 40, wantH: 30},
		{name: "canvas default", w: 100, h: 50, ts: []string{"canvas"}, wantW: 100, wantH: 50},
		{name: "crop", w: 100, h: 50, ts: []string{"crop:width=30,height=20,x=10,y=5"}, wantW: 30, wantH: 20},
		{name: "crop center", w: 100, h: 50, ts: []string{"crop:width=30,height=20,mode=center"}, wantW: 30, wantH: 20},
		{name: "rotate 90", w: 100, h: 50, ts: []string{"rotate:angle=90"}, wantW: 50, wantH: 100},
		{name: "rotate -90", w: 100, h: 50, ts: []string{"rotate:angle=-90"}, wantW: 50, wantH: 100},
		{name: "rotate 180", w: 100, h: 50, ts: []string{"rotate:angle=180"}, wantW: 100, wantH: 50},
		{name: "rotate 0", w: 100, h: 50, ts: []string{"rotate:angle=0"}, wantW: 100, wantH: 50},
		{name: "transpose", w: 100, h: 50, ts: []string{"transpose"}, wantW: 50, wantH: 100},
		{name: "transverse", w: 100, h: 50, ts: []string{"transverse"}, wantW: 50, wantH: 100},
		{name: "flips", w: 100, h: 50, ts: []string{"flipHorizontally", "flipVertically"}, wantW: 100, wantH: 50},
		{name: "chain", w: 599, h: 417, ts: []string{"maxSize:width=300", "border:width=5,height=5", "crop:width=100,height=100,mode=center"}, wantW: 100, wantH: 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := source(t, tc.w, tc.h, "png", false)
			res := run(t, e, src, "", tc.env, tc.ts...)
			if res.Width != tc.wantW || res.Height != tc.wantH {
				t.Errorf("%v on %dx%d: got %dx%d, want %dx%d", tc.ts, tc.w, tc.h, res.Width, res.Height, tc.wantW, tc.wantH)
			}
			got := decodeRGBA(t, res.Data).Bounds().Size()
			if got != (image.Point{tc.wantW, tc.wantH}) {
				t.Errorf("decoded output is %v, want %dx%d", got, tc.wantW, tc.wantH)
			}
		})
	}
}

// TestGeometryShrinkOnLoad runs the resizing transformations on large JPEGs,
// where the decoder shrinks, and checks that sizes are computed from the
// header size: the same formulas as without shrinking.
func TestGeometryShrinkOnLoad(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	const W, H = 2396, 1668 // 599x417 times 4
	src := source(t, W, H, "jpg", false)
	poi := Env{Metadata: map[string]any{"poi": []any{map[string]any{"cx": 1640, "cy": 1240}}}}
	tests := []struct {
		ts           []string
		env          Env
		wantW, wantH int
		wantShrink   bool
	}{
		{ts: []string{"resize:height=200"}, wantW: 288, wantH: 200, wantShrink: true}, // ceil(2396*200/1668) = ceil(287.29)
		{ts: []string{"resize:width=200"}, wantW: 200, wantH: 140, wantShrink: true},
		{ts: []string{"maxSize:height=200"}, wantW: 287, wantH: 200, wantShrink: true},
		{ts: []string{"maxSize:width=200"}, wantW: 200, wantH: 139, wantShrink: true},
		{ts: []string{"thumbnail:width=200,height=200"}, wantW: 200, wantH: 200, wantShrink: true},
		{ts: []string{"thumbnail:width=40,height=40,fit=inset"}, wantW: 40, wantH: 28, wantShrink: true},
		{ts: []string{"smartSize:width=100,height=100"}, env: poi, wantW: 100, wantH: 100, wantShrink: true},
		{ts: []string{"smartSize:width=300,height=100"}, wantW: 300, wantH: 100, wantShrink: true},
		{ts: []string{"resize:width=2000"}, wantW: 2000, wantH: 1393, wantShrink: false},
		{ts: []string{"flipVertically", "resize:width=200"}, wantW: 200, wantH: 140, wantShrink: false},
	}
	for _, tc := range tests {
		t.Run(tc.ts[0], func(t *testing.T) {
			t.Parallel()
			c, err := e.ParseChain(tc.ts)
			if err != nil {
				t.Fatal(err)
			}
			d, err := e.decode(src, c.steps, tc.env, nil)
			if err != nil {
				t.Fatal(err)
			}
			shrunk := d.img.Width() < W
			d.img.Close()
			if shrunk != tc.wantShrink {
				t.Errorf("shrink-on-load: got %v, want %v", shrunk, tc.wantShrink)
			}
			res := run(t, e, src, "", tc.env, tc.ts...)
			if res.Width != tc.wantW || res.Height != tc.wantH {
				t.Errorf("got %dx%d, want %dx%d", res.Width, res.Height, tc.wantW, tc.wantH)
			}
		})
	}
}

func TestSmartCropRect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		w, h int
		crop string
		want image.Rectangle
	}{
		{250, 250, "close", image.Rect(285, 185, 285+250, 185+250)},
		{250, 250, "medium", image.Rect(218, 118, 218+384, 118+384)},
		{250, 250, "wide", image.Rect(157, 57, 157+507, 57+507)},
		{600, 250, "medium", image.Rect(35, 154, 35+751, 154+313)},
		{600, 250, "wide", image.Rect(0, 110, 960, 110+400)},
		{250, 600, "medium", image.Rect(254, 0, 254+313, 751)},
	}
	for _, tc := range tests {
		t.Run(tc.crop, func(t *testing.T) {
			c := closeness[tc.crop]
			got := smartCropRect(1024, 768, tc.w, tc.h, 410, 310, c[0], c[1])
			if got != tc.want {
				t.Errorf("%dx%d %s: got %v, want %v", tc.w, tc.h, tc.crop, got, tc.want)
			}
		})
	}
}

func TestPickShrink(t *testing.T) {
	t.Parallel()
	tests := []struct{ w, h, minW, minH, want int }{
		{4000, 3000, 267, 200, 8},
		{1920, 1080, 356, 200, 4},
		{1920, 1080, 800, 450, 2},
		{4000, 3000, 800, 600, 4},
		{4000, 3000, 100, 100, 8},
		{599, 417, 288, 200, 2},
		{599, 417, 301, 200, 1},
		{4000, 3000, 0, 0, 1},
	}
	for _, tc := range tests {
		if got := pickShrink(tc.w, tc.h, tc.minW, tc.minH); got != tc.want {
			t.Errorf("pickShrink(%d,%d,%d,%d) = %d, want %d", tc.w, tc.h, tc.minW, tc.minH, got, tc.want)
		}
	}
}
