package api_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// TestClientHints: with client hints on, image answers ask for them
// (Accept-CH); Sec-CH-DPR and dpr size the output; width=auto takes
// Sec-CH-Width rounded up to the step, so ten widths within one step are
// one cached variant with the same bytes; Vary names the hints used; the
// URL's access token authorises them all.
func TestClientHints(t *testing.T) {
	cfg := testConfig()
	cfg.ClientHints.Enabled = true
	e := newEnv(t, cfg)
	id := e.upload(jpegImage(t, 800, 600))
	base := "/users/alice/images/" + id + ".png"
	width := func(r response) int {
		t.Helper()
		if r.StatusCode != 200 {
			t.Fatalf("%d %s", r.StatusCode, r.body)
		}
		w, _ := strconv.Atoi(r.Header.Get("X-Service-OutputWidth"))
		return w
	}
	t.Run("dpr parameter", func(t *testing.T) {
		r := e.get(e.tokenURL(base+"?t[]=thumbnail:width=200,height=100,dpr=2", userPriv))
		if w := width(r); w != 400 || r.Header.Get("Accept-CH") != "Sec-CH-DPR, Sec-CH-Width, Sec-CH-Viewport-Width" {
			t.Errorf("width %d, Accept-CH %q", w, r.Header.Get("Accept-CH"))
		}
		if strings.Contains(r.Header.Get("Vary"), "Sec-CH") {
			t.Errorf("an explicit dpr varies on no hint: Vary %q", r.Header.Get("Vary"))
		}
	})
	t.Run("Sec-CH-DPR", func(t *testing.T) {
		r := e.get(e.tokenURL(base+"?t[]=thumbnail:width=200,height=100", userPriv), "Sec-CH-DPR", "1.5")
		if w := width(r); w != 300 || !strings.Contains(r.Header.Get("Vary"), "Sec-CH-DPR") {
			t.Errorf("width %d, Vary %q", w, r.Header.Get("Vary"))
		}
		if w := width(e.get(e.tokenURL(base+"?t[]=thumbnail:width=200,height=100", userPriv), "Sec-CH-DPR", "9")); w != 800 {
			t.Errorf("Sec-CH-DPR 9 (clamped to 4): width %d", w)
		}
	})
	t.Run("dpr out of range", func(t *testing.T) {
		r := e.get(e.tokenURL(base+"?t[]=resize:width=100,dpr=5", userPriv))
		if r.StatusCode != 400 || !strings.Contains(r.errMessage(t), "dpr must be a number between 1 and 4") {
			t.Errorf("%d %s", r.StatusCode, r.body)
		}
	})
	t.Run("width auto within one step", func(t *testing.T) {
		var first []byte
		for i := 0; i < 10; i++ {
			r := e.get(e.tokenURL("/users/alice/images/"+id+".png?t[]=resize:width=auto", userPriv), "Sec-CH-Width", strconv.Itoa(301+i*11))
			if w := width(r); w != 400 {
				t.Fatalf("Sec-CH-Width %d: width %d, want 400", 301+i*11, w)
			}
			if i == 0 {
				first = r.body
				if v := r.Header.Get("Vary"); !strings.Contains(v, "Sec-CH-Width") || !strings.Contains(v, "Sec-CH-Viewport-Width") {
					t.Errorf("Vary %q", v)
				}
			} else if !bytes.Equal(r.body, first) || r.Header.Get("X-Service-TransformationCache") != "Hit" {
				t.Errorf("Sec-CH-Width %d: %s, other bytes: %v", 301+i*11, r.Header.Get("X-Service-TransformationCache"), !bytes.Equal(r.body, first))
			}
		}
		list := e.get(e.tokenURL("/users/alice/images/"+id+"/variants", userPriv)).json(t)["variants"].([]any)
		n := 0
		for _, v := range list {
			if strings.HasPrefix(v.(map[string]any)["chain"].(string), "resize:width=") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d cached variants of resize:width=auto, want 1: %v", n, list)
		}
	})
	t.Run("width auto fallbacks", func(t *testing.T) {
		u := e.tokenURL(base+"?t[]=maxSize:width=auto", userPriv)
		if w := width(e.get(u, "Sec-CH-Viewport-Width", "150", "Sec-CH-DPR", "2")); w != 300 {
			t.Errorf("viewport 150 at DPR 2: width %d, want 300", w)
		}
		if w := width(e.get(u)); w != 800 {
			t.Errorf("no hint: width %d, want the stored 800", w)
		}
		if w := width(e.get(u, "Sec-CH-Width", "5000")); w != 800 {
			t.Errorf("wider than stored: width %d, want 800", w)
		}
		// A hint that is not a positive integer is absent: the next one
		// decides, as without it.
		for _, bad := range []string{"abc", "-5", "0", "1e3", "300.5"} {
			if w := width(e.get(u, "Sec-CH-Width", bad)); w != 800 {
				t.Errorf("Sec-CH-Width %q alone: width %d, want the stored 800", bad, w)
			}
			if w := width(e.get(u, "Sec-CH-Width", bad, "Sec-CH-Viewport-Width", "150", "Sec-CH-DPR", "2")); w != 300 {
				t.Errorf("Sec-CH-Width %q with viewport 150 at DPR 2: width %d, want 300", bad, w)
			}
		}
	})
	t.Run("DPR stepped", func(t *testing.T) {
		u := e.tokenURL(base+"?t[]=thumbnail:width=100,height=50", userPriv)
		for _, dpr := range []string{"1.01", "1.2", "1.49", "1.5"} {
			if w := width(e.get(u, "Sec-CH-DPR", dpr)); w != 150 {
				t.Errorf("Sec-CH-DPR %s: width %d, want 150 (rounded up to 1.5)", dpr, w)
			}
		}
		if w := width(e.get(e.tokenURL(base+"?t[]=thumbnail:width=100,height=50,dpr=2.625", userPriv))); w != 300 {
			t.Errorf("dpr=2.625: width %d, want 300 (rounded up to 3)", w)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		off := newEnv(t, testConfig())
		id := off.upload(jpegImage(t, 300, 200))
		r := off.get(off.tokenURL("/users/alice/images/"+id+".png?t[]=thumbnail:width=100,height=50", userPriv), "Sec-CH-DPR", "2")
		if w := width(r); w != 100 || r.Header.Get("Accept-CH") != "" {
			t.Errorf("width %d, Accept-CH %q", w, r.Header.Get("Accept-CH"))
		}
		r = off.get(off.tokenURL("/users/alice/images/"+id+".png?t[]=resize:width=auto", userPriv), "Sec-CH-Width", "100")
		if r.StatusCode != 400 || !strings.Contains(r.errMessage(t), "width=auto needs client hints") {
			t.Errorf("width=auto disabled: %d %s", r.StatusCode, r.body)
		}
	})
}

// TestClientHintsConfig refuses DPR steps that are not ascending ratios
// from 1 to 4, naming the key.
func TestClientHintsConfig(t *testing.T) {
	t.Parallel()
	for _, steps := range [][]float64{{1, 0.5}, {2, 1.5}, {1, 5}, {1, 2, 2}} {
		c := testConfig()
		c.ClientHints.DPRSteps = steps
		c.Defaults()
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "clientHints.dprSteps: want ascending ratios from 1 to 4") {
			t.Errorf("%v: %v", steps, err)
		}
	}
	c := testConfig()
	c.Defaults()
	if err := c.Validate(); err != nil || len(c.ClientHints.DPRSteps) != 5 {
		t.Errorf("defaults: %v %v", c.ClientHints.DPRSteps, err)
	}
}
