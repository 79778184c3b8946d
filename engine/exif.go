package engine

import (
	"bytes"
	"encoding/binary"
	"math"
	"path"
	"strings"

	"github.com/rwcarlsen/goexif/exif"
	"github.com/rwcarlsen/goexif/tiff"
)

// EXIFOptions says which embedded metadata ReadEXIF keeps.
type EXIFOptions struct {
	// Tags lists the tag names to keep, with path.Match wildcards, compared
	// without regard to case: EXIF names as "Make" or "DateTimeOriginal",
	// IPTC as "IPTC:Keywords", XMP as "XMP:dc:title". Empty keeps nothing;
	// ["*"] keeps every tag.
	Tags []string
	// GPS keeps the GPS tags (names starting with "GPS"), which say where
	// the picture was taken; without it they are dropped whatever Tags
	// says.
	GPS bool
}

// skippedTags are EXIF structure or binary payloads, never kept.
var skippedTags = map[string]bool{
	"ExifIFDPointer": true, "GPSInfoIFDPointer": true, "InteroperabilityIFDPointer": true,
	"ThumbJPEGInterchangeFormat": true, "ThumbJPEGInterchangeFormatLength": true, "MakerNote": true,
}

// dateTags hold "YYYY:MM:DD HH:MM:SS" dates, written as ISO 8601.
var dateTags = map[string]bool{"DateTime": true, "DateTimeOriginal": true, "DateTimeDigitized": true}

// ReadEXIF returns the EXIF, IPTC and XMP tags of an image that opts keeps,
// typed: numbers as JSON numbers, several values as arrays, dates as ISO
// 8601 ("2024-05-01T13:45:10"), GPS positions as signed decimal degrees.
// An image without such metadata, or with metadata it cannot parse, gives
// an empty map: metadata is a courtesy, never a reason to refuse an upload.
func ReadEXIF(data []byte, opts EXIFOptions) map[string]any {
	out := map[string]any{}
	if len(opts.Tags) == 0 {
		return out
	}
	keep := func(name string) bool {
		if !opts.GPS && (strings.HasPrefix(name, "GPS") || strings.HasPrefix(name, "XMP:exif:GPS")) {
			return false
		}
		lower := strings.ToLower(name)
		for _, p := range opts.Tags {
			if ok, _ := path.Match(strings.ToLower(p), lower); ok {
				return true
			}
		}
		return false
	}
	decodeEXIF(exifBlock(data), keep, out)
	for k, v := range readIPTC(data) {
		if keep(k) {
			out[k] = v
		}
	}
	for k, v := range readXMP(data) {
		if keep(k) {
			out[k] = v
		}
	}
	return out
}

// exifWalker collects tags into out.
type exifWalker struct {
	keep func(string) bool
	out  map[string]any
}

// Walk stores one tag's typed value.
func (w exifWalker) Walk(name exif.FieldName, tag *tiff.Tag) error {
	n := string(name)
	if skippedTags[n] || !w.keep(n) {
		return nil
	}
	if v, ok := tagValue(n, tag); ok {
		w.out[n] = v
	}
	return nil
}

// decodeEXIF adds the kept tags of an EXIF block to out. Why the recover:
// the block comes from the uploader, and a decoder's panic on a crafted
// one must cost the tags, not the upload.
func decodeEXIF(raw []byte, keep func(string) bool, out map[string]any) {
	if raw == nil || !tiffSane(raw) {
		return
	}
	defer func() {
		if recover() != nil {
			clear(out)
		}
	}()
	if x, err := exif.Decode(bytes.NewReader(raw)); err == nil || (x != nil && !exif.IsCriticalError(err)) {
		readEXIFTags(x, keep, out)
	}
}

func readEXIFTags(x *exif.Exif, keep func(string) bool, out map[string]any) {
	_ = x.Walk(exifWalker{keep: keep, out: out})
	if _, ok := out["GPSLatitude"]; ok {
		if lat, long, err := x.LatLong(); err == nil && !math.IsNaN(lat) && !math.IsNaN(long) {
			out["GPSLatitude"], out["GPSLongitude"] = lat, long
			delete(out, "GPSLatitudeRef")
			delete(out, "GPSLongitudeRef")
		}
	}
}

// tagValue types one tag's value.
func tagValue(name string, tag *tiff.Tag) (any, bool) {
	n := int(tag.Count)
	var vals []any
	switch tag.Format() {
	case tiff.StringVal:
		s, err := tag.StringVal()
		s = strings.TrimSpace(strings.TrimRight(s, "\x00"))
		if err != nil || s == "" {
			return nil, false
		}
		if dateTags[name] {
			s = isoDate(s)
		}
		return s, true
	case tiff.IntVal:
		for i := range n {
			v, err := tag.Int64(i)
			if err != nil {
				return nil, false
			}
			vals = append(vals, v)
		}
	case tiff.RatVal:
		for i := range n {
			num, den, err := tag.Rat2(i)
			if err != nil || den == 0 {
				return nil, false
			}
			vals = append(vals, float64(num)/float64(den))
		}
	case tiff.FloatVal:
		for i := range n {
			v, err := tag.Float(i)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, false
			}
			vals = append(vals, v)
		}
	default: // undefined bytes: versions, maker data, binary blobs
		return nil, false
	}
	switch len(vals) {
	case 0:
		return nil, false
	case 1:
		return vals[0], true
	}
	return vals, true
}

// isoDate turns EXIF's "2024:05:01 13:45:10" into "2024-05-01T13:45:10";
// anything else is kept as it is.
func isoDate(s string) string {
	if len(s) == 19 && s[4] == ':' && s[7] == ':' && s[10] == ' ' {
		return s[:4] + "-" + s[5:7] + "-" + s[8:10] + "T" + s[11:]
	}
	return s
}

// exifBlock returns what goexif decodes: a JPEG's APP1 EXIF segment, TIFF
// files as they are,
// the EXIF chunk of PNG (eXIf) and WebP (EXIF), else nil.
func exifBlock(data []byte) []byte {
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xd8}):
		// Why not the whole file: goexif looks for the segment a byte at a
		// time, which cost 13 ms per megapixel of a JPEG without EXIF.
		return jpegSegment(data, 0xe1, "Exif\x00\x00")
	case bytes.HasPrefix(data, []byte("II*\x00")), bytes.HasPrefix(data, []byte("MM\x00*")):
		return data
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		for p := 8; p+12 <= len(data); {
			n := int(binary.BigEndian.Uint32(data[p:]))
			if n < 0 || p+12+n > len(data) {
				return nil
			}
			if string(data[p+4:p+8]) == "eXIf" {
				return data[p+8 : p+8+n]
			}
			p += 12 + n
		}
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		for p := 12; p+8 <= len(data); {
			n := int(binary.LittleEndian.Uint32(data[p+4:]))
			if n < 0 || p+8+n > len(data) {
				return nil
			}
			if string(data[p:p+4]) == "EXIF" {
				return data[p+8 : p+8+n]
			}
			p += 8 + n + n&1
		}
	}
	return nil
}
