package engine

import (
	"bytes"
	"fmt"
	"image"
	"math"
	"strings"
	"testing"
)

// parityTol is the largest normalised RMSE (0..1) TestImboParity accepts
// from each transformation against ImageMagick.
var parityTol = map[string]float64{
	"sepia": 0.006, "histogram": 0.005, "sharpen": 0.003, "vignette": 0.005, "drawPois": 0.01, "level": 0.002,
}

// TestImboParity renders sepia, histogram, sharpen, vignette, drawPois and
// level on three photographs and a translucent picture, with the engine
// and with ImageMagick running Imbo's Imagick calls, and requires the
// normalised RMSE (0..1) under each transformation's tolerance (parityTol).
// Measured against Debian's ImageMagick 6.9.11 Q16: sepia at most 0.0023,
// histogram and level 0, sharpen 0.0006, vignette 0.0015, drawPois 0.0073
// (ImageMagick's antialiased stroke is a little bolder). The tolerances
// leave room for 8-bit against 16-bit rounding; none lets the old
// renderings through (sepia 0.21-0.38, histogram 0.08-0.32, sharpen
// 0.008-0.077, vignette with a none end 0.09-0.20, drawPois 0.048-0.075,
// level on the translucent picture 0.29).
func TestImboParity(t *testing.T) {
	pois := map[string]any{"poi": []any{
		map[string]any{"x": 40.0, "y": 30.0, "width": 60.0, "height": 50.0},
		map[string]any{"cx": 200.0, "cy": 120.0},
		map[string]any{"cx": 90.0, "cy": 170.0},
	}}
	judgeAll(t, []judgeCase{
		{name: "sepia", spec: "sepia", args: judgeArgs("-sepia-tone", "80%"), tol: parityTol["sepia"]},
		{name: "sepia_50", spec: "sepia:threshold=50", args: judgeArgs("-sepia-tone", "50%"), tol: parityTol["sepia"]},
		{name: "histogram", spec: "histogram", args: judgeHistogram(1, 1.618), tol: parityTol["histogram"]},
		{name: "sharpen_light", spec: "sharpen", args: judgeArgs("-unsharp", "2x1+1+0.05"), tol: parityTol["sharpen"]},
		{name: "sharpen_moderate", spec: "sharpen:preset=moderate", args: judgeArgs("-unsharp", "2x1+2+0.05"), tol: parityTol["sharpen"]},
		{name: "sharpen_strong", spec: "sharpen:preset=strong", args: judgeArgs("-unsharp", "2x1+3+0.025"), tol: parityTol["sharpen"]},
		{name: "sharpen_params", spec: "sharpen:radius=3,sigma=1.5,gain=1.5,threshold=0.02", args: judgeArgs("-unsharp", "3x1.5+1.5+0.02"), tol: parityTol["sharpen"]},
		{name: "vignette", spec: "vignette", args: judgeVignette("none", "#000", 1.5), tol: parityTol["vignette"]},
		{name: "vignette_white_none", spec: "vignette:inner=ffffff,outer=none", args: judgeVignette("#ffffff", "none", 1.5), tol: parityTol["vignette"]},
		{name: "vignette_none_orange", spec: "vignette:inner=none,outer=ff8800,scale=1.2", args: judgeVignette("none", "#ff8800", 1.2), tol: parityTol["vignette"]},
		{name: "vignette_colours", spec: "vignette:inner=ffffff,outer=3767bf,scale=1.2", args: judgeVignette("#ffffff", "#3767bf", 1.2), tol: parityTol["vignette"]},
		// Imbo's four rectangles for the box (borderSize-1 = 1 pixel out),
		// then its circles through (cx+30, cy+30).
		{name: "drawPois", spec: "drawPois", meta: pois, args: judgeArgs(
			"+antialias", "-fill", "#f00", "-stroke", "#f00", "-strokewidth", "1",
			"-draw", "rectangle 39,30 40,80 rectangle 100,30 101,80 rectangle 39,29 101,30 rectangle 39,80 101,81",
			"-antialias", "-fill", "transparent", "-strokewidth", "2", "-draw", "circle 200,120 230,150",
			"-draw", "circle 90,170 120,200"), tol: parityTol["drawPois"]},
		{name: "level_all_50", spec: "level:amount=50", args: judgeArgs("-channel", "RGBA", "-level", "0,100%,5", "+channel"), tol: parityTol["level"]},
		{name: "level_gb_neg60", spec: "level:channel=gb,amount=-60", args: judgeArgs("-channel", "GB", "-level", "0,100%,0.4", "+channel"), tol: parityTol["level"]},
	})
}

// judgeVignette is Imbo's vignette: a radial gradient on a canvas scale
// times the image, cropped to the image around its centre, multiplied in.
func judgeVignette(inner, outer string, scale float64) func(*testing.T, judgeSource) []string {
	return func(t *testing.T, src judgeSource) []string {
		cfg, _, err := image.DecodeConfig(bytes.NewReader(src.png))
		if err != nil {
			t.Fatal(err)
		}
		sw, sh := math.Floor(float64(cfg.Width)*scale), math.Floor(float64(cfg.Height)*scale)
		crop := fmt.Sprintf("%dx%d+%d+%d", cfg.Width, cfg.Height, int(math.Floor((sw-float64(cfg.Width))/2)), int(math.Floor((sh-float64(cfg.Height))/2)))
		return []string{"(", "-size", fmt.Sprintf("%dx%d", int(sw), int(sh)), "radial-gradient:" + inner + "-" + outer,
			"-crop", crop, "+repage", ")", "-compose", "multiply", "-composite"}
	}
}

// judgeHistogram is Imbo's histogram: the bars of each channel, counted
// here from the source's pixels, drawn without antialiasing on a
// transparent layer whose alpha is divided by 1.1, blended onto black, and
// black made transparent.
func judgeHistogram(scale int, ratio float64) func(*testing.T, judgeSource) []string {
	return func(t *testing.T, src judgeSource) []string {
		img, _, err := image.Decode(bytes.NewReader(src.png))
		if err != nil {
			t.Fatal(err)
		}
		px := toNRGBA(img)
		var counts [3][256]int
		peak := 0
		for i := 0; i < len(px.Pix); i += 4 {
			for c := 0; c < 3; c++ {
				counts[c][px.Pix[i+c]]++
				peak = max(peak, counts[c][px.Pix[i+c]])
			}
		}
		w := 256 * scale
		h := int(math.Floor(float64(w) / ratio))
		size := fmt.Sprintf("%dx%d", w, h)
		args := []string{"-delete", "0", "-size", size, "xc:black"}
		for c, col := range []string{"#D93333", "#58C458", "#3767BF"} {
			var mvg strings.Builder
			for x, n := range counts[c] {
				y := h * n / peak
				for i := 0; i < scale; i++ {
					fmt.Fprintf(&mvg, "line %d,%d %d,%d ", x*scale+i, h, x*scale+i, h-y)
				}
			}
			args = append(args, "(", "-size", size, "xc:none", "+antialias", "-stroke", col, "-draw", mvg.String(),
				"-channel", "A", "-evaluate", "divide", "1.1", "+channel", ")", "-compose", "blend", "-composite")
		}
		return append(args, "-transparent", "black")
	}
}
