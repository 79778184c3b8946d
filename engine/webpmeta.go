package engine

import (
	"encoding/binary"
	"errors"
)

// stripWebPMetadata removes the EXIF and XMP chunks (and the ICCP chunk
// unless keepProfile) from an extended-format WebP file and clears their
// flags in the VP8X header. Why: libvips 8.14's webpsave ignores its strip
// option and builds an EXIF chunk even for an image without metadata, so
// the output policy (metadata.go) finishes the job on the encoded bytes.
// A simple-format file (no VP8X) carries no metadata and is returned as is.
func stripWebPMetadata(b []byte, keepProfile bool) ([]byte, error) {
	const (
		flagICC  = 1 << 5
		flagEXIF = 1 << 3
		flagXMP  = 1 << 2
	)
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return nil, errors.New("webp: not a RIFF WEBP file")
	}
	out := make([]byte, 12, len(b))
	copy(out, b[:12])
	vp8x := -1
	for p := 12; p < len(b); {
		if p+8 > len(b) {
			return nil, errors.New("webp: truncated chunk header")
		}
		id := string(b[p : p+4])
		size := int(binary.LittleEndian.Uint32(b[p+4:]))
		end := p + 8 + size + size%2
		if size < 0 || end > len(b) || end < p {
			return nil, errors.New("webp: truncated chunk")
		}
		drop := id == "EXIF" || id == "XMP " || (id == "ICCP" && !keepProfile)
		if !drop {
			if id == "VP8X" {
				vp8x = len(out)
			}
			out = append(out, b[p:end]...)
		}
		p = end
	}
	if vp8x >= 0 && vp8x+9 <= len(out) {
		mask := byte(flagEXIF | flagXMP)
		if !keepProfile {
			mask |= flagICC
		}
		out[vp8x+8] &^= mask
	}
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	return out, nil
}
