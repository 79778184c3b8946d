package engine

import (
	"bytes"
	"fmt"
	"slices"
)

// InputFormats are the extensions of every input type the engine decodes;
// Config.Uploads.Formats chooses which of them uploads may use.
var InputFormats = []string{"jpg", "png", "gif", "webp", "tif", "avif", "heic", "jxl"}

// DefaultUploadFormats are the upload types accepted when
// Config.Uploads.Formats is empty.
var DefaultUploadFormats = []string{"jpg", "png", "gif", "webp"}

// validUploadFormats reports the first entry of formats the engine cannot
// decode.
func validUploadFormats(formats []string) error {
	for _, f := range formats {
		if VideoTypes[f] != "" {
			continue // uploads.video adds them; Validate checks it is on
		}
		if !slices.Contains(InputFormats, f) {
			return fmt.Errorf("engine: uploads.formats: %q is not one of %v", f, InputFormats)
		}
	}
	return nil
}

// sniffHEIF identifies AVIF and HEIC files (ISO base media files whose ftyp
// box names an AVIF or HEIF brand, as major or compatible brand).
func sniffHEIF(data []byte) (format, bool) {
	if len(data) < 16 || string(data[4:8]) != "ftyp" {
		return format{}, false
	}
	size := int(uint32(data[0])<<24 | uint32(data[1])<<16 | uint32(data[2])<<8 | uint32(data[3]))
	if size < 16 || size > len(data) || size > 4096 {
		return format{}, false
	}
	// Major brand at 8, minor version at 12, compatible brands from 16.
	brands := [][]byte{data[8:12]}
	for i := 16; i+4 <= size; i += 4 {
		brands = append(brands, data[i:i+4])
	}
	has := func(names ...string) bool {
		for _, b := range brands {
			for _, n := range names {
				if bytes.Equal(b, []byte(n)) {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has("avif", "avis"):
		return format{"image/avif", "avif"}, true
	case has("heic", "heix", "heim", "heis", "hevc", "hevx", "hevm", "hevs"):
		return format{"image/heic", "heic"}, true
	}
	return format{}, false
}

// uploadAllowed reports whether uploads of ext are accepted.
func (e *Engine) uploadAllowed(ext string) bool {
	return slices.Contains(e.cfg.Uploads.Formats, ext)
}

// stillFallback is the output format of a chain on a source whose own
// format the engine does not encode (HEIC): PNG when it has alpha, else
// JPEG.
func stillFallback(hasAlpha bool) string {
	if hasAlpha {
		return "png"
	}
	return "jpg"
}
