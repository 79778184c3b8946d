package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf16"

	"github.com/davidbyttow/govips/v2/vips"
)

// toWorkingColour converts a freshly decoded image to sRGB pixels, so that
// every step and every encoder sees the colours the source means: CMYK (with
// its embedded profile, or libvips' fallback CMYK profile) and RGB images
// carrying a profile other than sRGB (Adobe RGB, Display P3, ProPhoto, ...)
// go through lcms. RGB data tagged sRGB, untagged data and grey images are
// left alone: they already are sRGB, and a transform would cost a pass over
// every pixel for nothing. libvips attaches the sRGB profile it converted
// to; the output policy (metadata.go) decides whether it is written.
func toWorkingColour(img *vips.ImageRef) error {
	switch {
	case img.Interpretation() == vips.InterpretationCMYK:
		if err := img.ToColorSpace(vips.InterpretationSRGB); err != nil {
			return fmt.Errorf("CMYK to sRGB: %w", err)
		}
		return nil
	case !img.HasICCProfile() || img.Bands() < 3:
		return nil
	case iccIsSRGB(img.GetICCProfile()):
		return nil
	}
	if err := img.TransformICCProfile(vips.SRGBV2MicroICCProfilePath); err != nil {
		return fmt.Errorf("embedded profile to sRGB: %w", err)
	}
	return nil
}

// iccIsSRGB reports whether an ICC profile describes sRGB, judged by its
// description tag ("sRGB IEC61966-2.1", "sRGB built-in", "sRGB v4 ICC
// preference", ...) or "uRGB", the compact sRGB profile govips embeds after
// a conversion (Compact-ICC-Profiles' sRGB-v2-micro). A profile that cannot
// be read counts as not sRGB: lcms then decides what it means.
func iccIsSRGB(profile []byte) bool {
	desc, ok := iccDescription(profile)
	return ok && (desc == "uRGB" || bytes.Contains(bytes.ToLower([]byte(desc)), []byte("srgb")))
}

// iccDescription returns the text of the 'desc' tag of an ICC profile, in
// either its v2 form (textDescriptionType) or its v4 form
// (multiLocalizedUnicodeType, first record).
func iccDescription(p []byte) (string, bool) {
	const header = 128
	if len(p) < header+4 {
		return "", false
	}
	be := binary.BigEndian
	n := int(be.Uint32(p[header:]))
	for i := 0; i < n; i++ {
		e := header + 4 + 12*i
		if e+12 > len(p) {
			return "", false
		}
		if string(p[e:e+4]) != "desc" {
			continue
		}
		off, size := int(be.Uint32(p[e+4:])), int(be.Uint32(p[e+8:]))
		if off < 0 || size < 12 || off+size > len(p) || off+size < off {
			return "", false
		}
		tag := p[off : off+size]
		switch string(tag[:4]) {
		case "desc": // type, reserved, ASCII count, ASCII text
			count := int(be.Uint32(tag[8:]))
			if count < 0 || 12+count > len(tag) {
				return "", false
			}
			return string(bytes.TrimRight(tag[12:12+count], "\x00")), true
		case "mluc": // type, reserved, records, record size, records (lang, country, length, offset)
			if len(tag) < 28 || be.Uint32(tag[8:]) == 0 {
				return "", false
			}
			l, o := int(be.Uint32(tag[20:])), int(be.Uint32(tag[24:]))
			if l < 0 || o < 0 || o+l > len(tag) || l%2 != 0 {
				return "", false
			}
			u := make([]uint16, l/2)
			for j := range u {
				u[j] = be.Uint16(tag[o+2*j:])
			}
			return string(utf16.Decode(u)), true
		}
		return "", false
	}
	return "", false
}
