package api

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// ClientHints configures responsive images by client hints: image
// responses ask the browser for Sec-CH-DPR, Sec-CH-Width and
// Sec-CH-Viewport-Width (Accept-CH), the sizing steps take the device
// pixel ratio from Sec-CH-DPR when the request gives no dpr, and resize and
// maxSize take width=auto from Sec-CH-Width. The URL's access token or
// signature authorises every variant the hints derive from it: hints are
// headers, and they only choose among sizes of what the URL names.
type ClientHints struct {
	// Enabled turns client hints on (default false).
	Enabled bool `yaml:"enabled"`
	// WidthStep rounds hinted widths up to a multiple of this many pixels
	// (default 100), so that the variant cache holds at most one variant
	// per step whatever widths browsers send.
	WidthStep int `yaml:"widthStep"`
	// DPRSteps are the device pixel ratios a dpr parameter or Sec-CH-DPR
	// is rounded up to (default 1, 1.5, 2, 3, 4; ascending, 1 to 4), so
	// that a URL makes at most one variant per step whatever ratios it is
	// sent with. They apply with client hints off too, to the parameter.
	DPRSteps []float64 `yaml:"dprSteps"`
}

// DefaultWidthStep is ClientHints.WidthStep's default.
const DefaultWidthStep = 100

func (h *ClientHints) defaults() {
	if h.WidthStep == 0 {
		h.WidthStep = DefaultWidthStep
	}
	if len(h.DPRSteps) == 0 {
		h.DPRSteps = engine.DefaultDPRSteps
	}
}

func (h ClientHints) validate() error {
	if h.WidthStep < 0 || h.WidthStep > 4096 {
		return fmt.Errorf("clientHints.widthStep: want 1 to 4096 pixels, got %d", h.WidthStep)
	}
	for i, s := range h.DPRSteps {
		if math.IsNaN(s) || s < 1 || s > engine.MaxDPR || (i > 0 && s <= h.DPRSteps[i-1]) {
			return fmt.Errorf("clientHints.dprSteps: want ascending ratios from 1 to %d, got %v", engine.MaxDPR, h.DPRSteps)
		}
	}
	return nil
}

// acceptCH is the Accept-CH header of image responses.
const acceptCH = "Sec-CH-DPR, Sec-CH-Width, Sec-CH-Viewport-Width"

// parseChain parses an image request's chain with the client's hints when
// they are on, and notes the hint headers the answer varies on.
func (c *call) parseChain(img storage.Image, specs []string) (engine.Chain, error) {
	hc := c.s.cfg.ClientHints
	// Subject: a filter with a canary chooses its version per image.
	subject := img.User + "/" + img.Identifier
	if !hc.Enabled {
		return c.s.engine.ParseChainHints(specs, engine.Hints{DPRSteps: hc.DPRSteps, Subject: subject})
	}
	c.w.Header().Set("Accept-CH", acceptCH)
	h := engine.Hints{DPR: c.hintDPR(), DPRSteps: hc.DPRSteps, Subject: subject}
	h.Width = c.hintWidth(h.DPR, hc.WidthStep, img.Width)
	chain, err := c.s.engine.ParseChainHints(specs, h)
	if err != nil {
		return chain, err
	}
	used := chain.HintsUsed()
	if used.DPR {
		c.varyHints = append(c.varyHints, "Sec-CH-DPR")
	}
	if used.Width {
		c.varyHints = append(c.varyHints, "Sec-CH-Width", "Sec-CH-Viewport-Width")
		if !used.DPR {
			c.varyHints = append(c.varyHints, "Sec-CH-DPR") // the viewport width is in CSS pixels
		}
	}
	return chain, nil
}

// hintDPR is Sec-CH-DPR clamped to 1..engine.MaxDPR, 0 without one (a
// header the browser sent is never the client's error).
func (c *call) hintDPR() float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(c.r.Header.Get("Sec-CH-DPR")), 64)
	if err != nil || math.IsNaN(f) || f <= 0 {
		return 0
	}
	return min(max(f, 1), engine.MaxDPR)
}

// hintWidth is the width width=auto takes, in device pixels: Sec-CH-Width,
// else Sec-CH-Viewport-Width times the DPR, else the stored width (a hint
// that is not a positive integer is absent); rounded
// up to a multiple of step and never more than the stored width.
func (c *call) hintWidth(dpr float64, step, stored int) int {
	w := 0
	if v, err := strconv.Atoi(strings.TrimSpace(c.r.Header.Get("Sec-CH-Width"))); err == nil && v > 0 {
		w = v
	} else if v, err := strconv.Atoi(strings.TrimSpace(c.r.Header.Get("Sec-CH-Viewport-Width"))); err == nil && v > 0 {
		w = int(math.Ceil(float64(v) * max(dpr, 1)))
	}
	if w <= 0 || w >= stored {
		return stored
	}
	return min((w+step-1)/step*step, stored)
}
