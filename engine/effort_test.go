package engine

import (
	"bytes"
	"strings"
	"testing"
)

func effortOf(v int) *int { return &v }

// TestEffortConfig: each encoder's effort is a setting: out of range it
// is refused naming its key, unset it is the default, and set it is what
// the encoder spends (a different effort, different bytes; the same, the
// same).
func TestEffortConfig(t *testing.T) {
	for _, c := range []struct {
		f   Effort
		key string
	}{
		{Effort{AVIF: effortOf(0)}, "effort.avif must be between 1 and 9"},
		{Effort{AVIFAuto: effortOf(10)}, "effort.avifAuto must be between 1 and 9"},
		{Effort{JXL: effortOf(0)}, "effort.jxl must be between 1 and 9"},
		{Effort{JXLAuto: effortOf(10)}, "effort.jxlAuto must be between 1 and 9"},
		{Effort{WebP: effortOf(7)}, "effort.webp must be between 0 and 6"},
		{Effort{GIF: effortOf(0)}, "effort.gif must be between 1 and 10"},
	} {
		if err := (Config{Effort: c.f}).Validate(); err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("Validate(%s): %v", c.key, err)
		}
	}
	d := Config{}.withDefaults().Effort
	if *d.AVIF != DefaultAVIFEffort || *d.AVIFAuto != DefaultAVIFAutoEffort || *d.JXL != DefaultJXLEffort ||
		*d.JXLAuto != DefaultJXLAutoEffort || *d.WebP != DefaultWebPEffort || *d.GIF != DefaultGIFEffort {
		t.Fatalf("default efforts %d %d %d %d %d %d", *d.AVIF, *d.AVIFAuto, *d.JXL, *d.JXLAuto, *d.WebP, *d.GIF)
	}
	src := source(t, 320, 240, "png", false)
	out := map[string][]byte{}
	for _, c := range []struct {
		name, format string
		f            Effort
	}{
		{"avif 1", "avif", Effort{AVIF: effortOf(1)}},
		{"avif 1 again", "avif", Effort{AVIF: effortOf(1)}},
		{"avif 4", "avif", Effort{AVIF: effortOf(4)}},
		{"webp 0", "webp", Effort{WebP: effortOf(0)}},
		{"webp 6", "webp", Effort{WebP: effortOf(6)}},
	} {
		e := newTestEngine(t, Config{Effort: c.f})
		out[c.name] = run(t, e, src, c.format, Env{}).Data
	}
	if !bytes.Equal(out["avif 1"], out["avif 1 again"]) {
		t.Error("two AVIF encodes at effort 1 differ")
	}
	if bytes.Equal(out["avif 1"], out["avif 4"]) || bytes.Equal(out["webp 0"], out["webp 6"]) {
		t.Error("another effort gave the same bytes: the setting does not reach the encoder")
	}
}
