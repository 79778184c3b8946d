package web

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/engine/schema/schematest"
)

// TestPlaceholderValuesChecked: only well-formed colours and BlurHash
// strings reach the page (app.js decodes what the server vouched for).
func TestPlaceholderValuesChecked(t *testing.T) {
	for in, want := range map[string]string{"#A0b1C2": "#a0b1c2", "#abc": "#aabbcc", "a0b1c280": "#a0b1c280",
		"red": "", "#a0b1c2\"": "", "": ""} {
		if got := hexColor(in); got != want {
			t.Errorf("hexColor(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"LEHV6nWB2yk8pyo0adR*.7kCMdnj":  "LEHV6nWB2yk8pyo0adR*.7kCMdnj", // 4×3 components, 28 characters
		"LEHV6nWB2yk8pyo0adR*.7kCMdn":   "",                             // one short
		"LEHV6nWB2yk8pyo0adR*.7kCMd\"j": "",                             // not base 83
		"00000":                         "",
	} {
		if got := blurHash(in); got != want {
			t.Errorf("blurHash(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestColorSyntax: the admin UI takes the one colour syntax (without
// none), as the engine and the filters do, and writes it for CSS.
func TestColorSyntax(t *testing.T) {
	t.Parallel()
	schematest.TestColors(t, false, func(s string, _ bool) (string, bool) {
		h := strings.TrimPrefix(hexColor(s), "#")
		if len(h) == 6 {
			h += "ff"
		}
		return h, h != ""
	})
}

// TestEXIFSummary: exposure is written as photographers read it, and the
// analysis view says why there is no EXIF.
func TestEXIFSummary(t *testing.T) {
	var x map[string]any
	_ = json.Unmarshal([]byte(`{"ExposureTime": 2, "FNumber": 1.8, "ISOSpeedRatings": [100, 200], "Model": "X100V", "Make": "FUJIFILM"}`), &x)
	rows := exifSummary(x)
	want := []kv{{"Camera", "FUJIFILM X100V"}, {"Exposure", "2 s · f/1.8 · ISO 100, 200"}}
	if len(rows) != len(want) {
		t.Fatalf("summary %v, want %v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d: %v, want %v", i, rows[i], want[i])
		}
	}
	a := analysis(imageEntry{}, nil, "Your key may not read this image's metadata: no.")
	if a.Analysed || a.EXIFNote != "Your key may not read this image's metadata: no." {
		t.Errorf("unanalysed image without readable metadata: %+v", a)
	}
}

// TestNoEXIFNote: without an exif key the note never says the original
// has no tags, and names the metadata change when the image was updated
// after upload.
func TestNoEXIFNote(t *testing.T) {
	for _, c := range []struct {
		name            string
		added, updated  string
		wantChangedWhen bool
	}{
		{"unchanged", "Mon, 02 Jun 2025 10:00:00 GMT", "Mon, 02 Jun 2025 10:00:00 GMT", false},
		{"changed", "Mon, 02 Jun 2025 10:00:00 GMT", "Tue, 03 Jun 2025 08:00:00 GMT", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := noEXIFNote(imageEntry{User: "alice", Added: c.added, Updated: c.updated})
			if strings.Contains(n, "original carries no") || !strings.Contains(n, "vitrine analyze --force --user alice") {
				t.Errorf("note %q", n)
			}
			if got := strings.Contains(n, "It was changed after upload ("+c.updated+")"); got != c.wantChangedWhen {
				t.Errorf("names the change: %v, want %v: %q", got, c.wantChangedWhen, n)
			}
		})
	}
}
