// Command faces is a vitrine listener that finds faces in every upload with
// pigo, a pure-Go detector (a copy of its core under pigo/, its cascade
// embedded), and writes them as points of interest in the image's metadata:
//
//	"poi": [{"x": 96, "y": 120, "width": 128, "height": 128, "quality": 41.2, "source": "faces"}]
//
// smartSize crops around the first (the best) of them, and thumbnail and
// crop with gravity=faces keep the box around them all. Points of interest
// the upload already had stay; faces from an earlier run are replaced.
package main

import (
	"bytes"
	"image"
	// The decoders image.Decode knows.
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
)

func init() {
	vitrine.Listener(onEvent)
}

func main() {}

// cascade is unpacked once per instance, on its first event.
var cascade *detector

func onEvent(ev *vitrine.Event) error {
	if ev.Name != "images.post" {
		return nil
	}
	s := defaults
	if err := vitrine.Settings(&s); err != nil {
		return err
	}
	body, err := vitrine.Body()
	if err != nil {
		return err
	}
	img, format, err := image.Decode(bytes.NewReader(body))
	if err != nil {
		// WebP, AVIF, TIFF and the like: no decoder in the guest, no faces.
		vitrine.Logf(vitrine.LevelDebug, "faces: not searched: %v", err)
		return nil
	}
	if cascade == nil {
		if cascade, err = newDetector(); err != nil {
			return err
		}
	}
	faces := cascade.find(img, s)
	var md struct {
		POI []map[string]any `json:"poi"`
	}
	if err := vitrine.Metadata(&md); err != nil {
		return err
	}
	poi := merge(md.POI, faces)
	if len(poi) == 0 {
		return nil
	}
	vitrine.Logf(vitrine.LevelDebug, "faces: %d in a %s image", len(faces), format)
	return vitrine.SetMetadata(map[string]any{"poi": poi})
}

// merge returns the points of interest the upload had, less faces from an
// earlier run, followed by the faces found: smartSize takes the first entry,
// so a point the client chose keeps precedence.
func merge(had []map[string]any, faces []face) []any {
	var out []any
	for _, p := range had {
		if p["source"] != "faces" {
			out = append(out, p)
		}
	}
	for _, f := range faces {
		out = append(out, f)
	}
	return out
}
