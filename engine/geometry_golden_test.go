package engine

import "testing"

// TestGoldenGeometry renders every geometry transformation and mode of this
// package on a small deterministic picture and compares it with
// testdata/golden/<name>.png (go test -run Golden -update rewrites them).
func TestGoldenGeometry(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	opaque := source(t, 160, 120, "png", false)
	alpha := source(t, 160, 120, "png", true)
	jpeg := source(t, 640, 480, "jpg", false)
	poi := Env{Metadata: map[string]any{"poi": []any{map[string]any{"x": 30, "y": 20, "width": 20, "height": 10}}}}
	tests := []struct {
		name string
		src  []byte
		env  Env
		ts   []string
	}{
		{name: "resize_width", src: opaque, ts: []string{"resize:width=80"}},
		{name: "resize_both", src: opaque, ts: []string{"resize:width=100,height=40"}},
		{name: "resize_alpha", src: alpha, ts: []string{"resize:width=75"}},
		{name: "resize_shrink_on_load", src: jpeg, ts: []string{"resize:width=90"}},
		{name: "maxSize", src: opaque, ts: []string{"maxSize:width=100,height=100"}},
		{name: "thumbnail_outbound", src: opaque, ts: []string{"thumbnail:width=60,height=60"}},
		{name: "thumbnail_inset", src: opaque, ts: []string{"thumbnail:width=60,height=60,fit=inset"}},
		{name: "thumbnail_shrink_on_load", src: jpeg, ts: []string{"thumbnail:width=50,height=50"}},
		{name: "smartSize_poi_close", src: opaque, ts: []string{"smartSize:width=50,height=50,poi=40,30,crop=close"}},
		{name: "smartSize_poi_wide", src: opaque, ts: []string{"smartSize:width=80,height=40,poi=40,30,crop=wide"}},
		{name: "smartSize_metadata_box", src: opaque, env: poi, ts: []string{"smartSize:width=50,height=50,crop=medium"}},
		{name: "smartSize_no_poi", src: opaque, ts: []string{"smartSize:width=90,height=40"}},
		{name: "crop", src: opaque, ts: []string{"crop:width=50,height=40,x=10,y=5"}},
		{name: "crop_center", src: opaque, ts: []string{"crop:width=50,height=40,mode=center"}},
		{name: "crop_center_x", src: opaque, ts: []string{"crop:width=50,height=40,y=70,mode=center-x"}},
		{name: "canvas_free", src: opaque, ts: []string{"canvas:width=200,height=150,x=10,y=20,bg=336699"}},
		{name: "canvas_center", src: opaque, ts: []string{"canvas:width=200,height=100,mode=center,bg=336699"}},
		{name: "canvas_center_y_crop", src: opaque, ts: []string{"canvas:width=100,height=100,mode=center-y,x=-10"}},
		{name: "canvas_alpha", src: alpha, ts: []string{"canvas:bg=ff0"}},
		{name: "canvas_transparent", src: opaque, ts: []string{"canvas:width=200,height=150,mode=center,bg=none"}},
		{name: "canvas_transparent_alpha", src: alpha, ts: []string{"canvas:width=120,height=150,mode=center,bg=transparent"}},
		{name: "border_outbound", src: opaque, ts: []string{"border:width=8,height=4,color=f0f"}},
		{name: "border_inline", src: opaque, ts: []string{"border:width=8,height=4,color=f0f,mode=inline"}},
		{name: "border_alpha", src: alpha, ts: []string{"border:width=6,height=6,color=0ff"}},
		{name: "rotate_90", src: opaque, ts: []string{"rotate:angle=90"}},
		{name: "rotate_180", src: opaque, ts: []string{"rotate:angle=180"}},
		{name: "rotate_30", src: opaque, ts: []string{"rotate:angle=30,bg=fff"}},
		{name: "rotate_minus_30_none", src: opaque, ts: []string{"rotate:angle=-30,bg=none"}},
		{name: "flipHorizontally", src: opaque, ts: []string{"flipHorizontally"}},
		{name: "flipVertically", src: opaque, ts: []string{"flipVertically"}},
		{name: "transpose", src: opaque, ts: []string{"transpose"}},
		{name: "transverse", src: opaque, ts: []string{"transverse"}},
		{name: "alpha_to_jpg", src: alpha, ts: []string{"convert:type=jpg"}},
		{name: "chain", src: jpeg, ts: []string{"maxSize:width=200", "crop:width=120,height=120,mode=center", "border:color=fff,width=3,height=3", "rotate:angle=90", "flipHorizontally"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, e, tc.src, "", tc.env, tc.ts...)
			assertGolden(t, "geometry_"+tc.name, res.Data, 2.5)
		})
	}
}
