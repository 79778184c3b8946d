package engine

import (
	"math"
	"strconv"
)

// Hints are what the client says of its display, which the sizing steps
// (thumbnail, resize, maxSize, crop, smartSize) may use. api reads them
// from the Sec-CH-DPR, Sec-CH-Width and Sec-CH-Viewport-Width request
// headers when client hints are on.
type Hints struct {
	// DPR is the device pixel ratio a sizing step without its own dpr
	// parameter multiplies its sizes by; 0 means none.
	DPR float64
	// Width is the width, in device pixels, `width=auto` on resize and
	// maxSize takes; 0 means the request has no width to give, and
	// width=auto is refused.
	Width int
	// DPRSteps are the device pixel ratios a dpr, from the parameter or
	// the hint, is rounded up to (ascending, 1 to MaxDPR; nil:
	// DefaultDPRSteps), so that any ratio a browser or a URL gives is one of
	// a few variants.
	DPRSteps []float64
	// Subject names the image the chain renders (user/identifier): a
	// guest with a canary (Canaried) chooses its version by it. Empty
	// chooses the main version.
	Subject string
}

// HintsUsed says which hints a parsed chain read, so that the response
// varies on the headers that gave them.
type HintsUsed struct {
	DPR, Width bool
}

// MaxDPR bounds the dpr parameter (and the DPR hint, which is clamped).
const MaxDPR = 4

// DefaultDPRSteps are Hints.DPRSteps' default.
var DefaultDPRSteps = []float64{1, 1.5, 2, 3, 4}

// stepDPR rounds dpr up to the first of steps at least as large (the
// largest step when none is).
func stepDPR(dpr float64, steps []float64) float64 {
	if len(steps) == 0 {
		steps = DefaultDPRSteps
	}
	for _, s := range steps {
		if dpr <= s+1e-9 {
			return s
		}
	}
	return steps[len(steps)-1]
}

// dprSteps are the transformations that take dpr; autoWidthSteps those
// that take width=auto.
var (
	dprSteps       = map[string]bool{"thumbnail": true, "resize": true, "maxSize": true, "crop": true, "smartSize": true}
	autoWidthSteps = map[string]bool{"resize": true, "maxSize": true}
)

// autoWidthDoc describes width=auto.
const autoWidthDoc = "`auto` takes the Sec-CH-Width client hint (clientHints.enabled), rounded up to clientHints.widthStep."

// dprParam declares dpr for the sizing steps' descriptions.
func dprParam() ParamDesc {
	return numParam("dpr", 1, MaxDPR, "Device pixel ratio, rounded up to one of clientHints.dprSteps (default 1, 1.5, 2, 3, 4): "+
		"sizes are multiplied by it (width=200,dpr=2 gives 400 pixels); without it, the Sec-CH-DPR client hint when client hints are on.")
}

// applyHints rewrites sp's sizes in device pixels before it is parsed: a
// dpr parameter (or, without one, h.DPR), rounded up to one of h.DPRSteps,
// multiplies width and height (and crop's x and y), and width=auto becomes
// h.Width. The dpr parameter is
// consumed, so `thumbnail:width=200,dpr=2` and `thumbnail:width=400` are the
// same step with the same cache key. It reports which hints it used.
func applyHints(sp *Spec, h Hints) (HintsUsed, error) {
	var used HintsUsed
	if !dprSteps[sp.Name] {
		return used, nil
	}
	params := make(map[string]string, len(sp.Params))
	for k, v := range sp.Params {
		params[k] = v
	}
	dpr := 1.0
	if v, ok := params["dpr"]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f < 1 || f > MaxDPR {
			return used, invalidf("%s: dpr must be a number between 1 and %d, got %q", sp.Name, MaxDPR, v)
		}
		dpr = f
		delete(params, "dpr")
	} else if h.DPR > 0 {
		dpr, used.DPR = h.DPR, true
	}
	dpr = stepDPR(dpr, h.DPRSteps)
	auto := params["width"] == "auto"
	if auto {
		if !autoWidthSteps[sp.Name] {
			return used, invalidf("%s: width=auto is taken by resize and maxSize only", sp.Name)
		}
		if h.Width <= 0 {
			return used, invalidf("%s: width=auto needs client hints (clientHints.enabled)", sp.Name)
		}
		params["width"] = strconv.Itoa(h.Width)
		used.Width = true
	}
	if dpr != 1 {
		for _, k := range []string{"width", "height", "x", "y"} {
			if k == "width" && auto {
				continue // Sec-CH-Width is in device pixels already
			}
			if n, err := strconv.Atoi(params[k]); err == nil && n > 0 {
				params[k] = strconv.Itoa(int(math.Round(float64(n) * dpr)))
			}
		}
	}
	sp.Params = params
	return used, nil
}
