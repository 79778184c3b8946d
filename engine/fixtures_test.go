package engine

import (
	"bytes"
	"encoding/binary"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// This file builds test inputs that carry metadata: ICC profiles for the
// common wide-gamut RGB spaces, and a JPEG with EXIF (camera, GPS), XMP and
// a profile, byte by byte, so that no fixture tool is needed.

// rgbSpace is a matrix/TRC RGB colour space: its primaries adapted to D50
// (the ICC colorant tags) and its transfer curve, either a pure gamma or the
// sRGB-style piecewise curve.
type rgbSpace struct {
	name    string
	r, g, b [3]float64
	gamma   float64 // pure gamma; 0 means the sRGB curve
}

var (
	adobeRGB = rgbSpace{name: "Adobe RGB (1998) compatible",
		r: [3]float64{0.6097, 0.3111, 0.0195}, g: [3]float64{0.2053, 0.6257, 0.0609},
		b: [3]float64{0.1492, 0.0632, 0.7446}, gamma: 563.0 / 256}
	displayP3 = rgbSpace{name: "Display P3 compatible",
		r: [3]float64{0.5151, 0.2412, -0.0011}, g: [3]float64{0.2920, 0.6922, 0.0419},
		b: [3]float64{0.1571, 0.0666, 0.7841}}
)

// iccProfile encodes s as an ICC v2 display profile: header, desc, wtpt,
// r/g/bXYZ and r/g/bTRC (a 'curv' gamma, or a 'para' curve for the sRGB curve).
func iccProfile(s rgbSpace) []byte {
	be := binary.BigEndian
	s15 := func(v float64) []byte { return be.AppendUint32(nil, uint32(int32(math.Round(v*65536)))) }
	xyz := func(v [3]float64) []byte {
		b := append([]byte("XYZ "), 0, 0, 0, 0)
		for _, c := range v {
			b = append(b, s15(c)...)
		}
		return b
	}
	desc := append([]byte("desc"), 0, 0, 0, 0)
	desc = be.AppendUint32(desc, uint32(len(s.name)+1))
	desc = append(append(desc, s.name...), 0)
	desc = append(desc, make([]byte, 4+4+2+1+67)...) // empty Unicode and ScriptCode parts
	var trc []byte
	if s.gamma > 0 {
		trc = be.AppendUint32(append([]byte("curv"), 0, 0, 0, 0), 1)
		trc = be.AppendUint16(trc, uint16(math.Round(s.gamma*256)))
	} else {
		trc = append([]byte("para"), 0, 0, 0, 0, 0, 3, 0, 0)
		for _, v := range []float64{2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045} {
			trc = append(trc, s15(v)...)
		}
	}
	tags := []struct {
		sig  string
		data []byte
	}{
		{"desc", desc}, {"wtpt", xyz([3]float64{0.9642, 1, 0.8249})},
		{"rXYZ", xyz(s.r)}, {"gXYZ", xyz(s.g)}, {"bXYZ", xyz(s.b)},
		{"rTRC", trc}, {"gTRC", trc}, {"bTRC", trc},
	}
	head := make([]byte, 128)
	copy(head[8:], []byte{2, 0x10, 0, 0})
	copy(head[12:], "mntrRGB XYZ ")
	copy(head[36:], "acsp")
	copy(head[68:], append(append(s15(0.9642), s15(1)...), s15(0.8249)...))
	table := be.AppendUint32(nil, uint32(len(tags)))
	var body []byte
	off := 128 + 4 + 12*len(tags)
	for _, t := range tags {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		table = append(table, t.sig...)
		table = be.AppendUint32(table, uint32(off+len(body)))
		table = be.AppendUint32(table, uint32(len(t.data)))
		body = append(body, t.data...)
	}
	p := append(append(head, table...), body...)
	be.PutUint32(p, uint32(len(p)))
	return p
}

// Strings planted in the fixture's metadata; an output must contain none.
const (
	fixtureMake  = "VitrineTestCam"
	fixtureModel = "Model-GPS-7"
	fixtureXMP   = "VitrineXMPCreator"
	fixtureIPTC  = "VitrineIPTCByline"
)

// iptcAPP13 is the payload of a Photoshop APP13 segment holding an IPTC
// By-line (2:80) record.
func iptcAPP13() []byte {
	rec := append([]byte{0x1C, 2, 80}, binary.BigEndian.AppendUint16(nil, uint16(len(fixtureIPTC)))...)
	rec = append(rec, fixtureIPTC...)
	if len(rec)%2 != 0 {
		rec = append(rec, 0)
	}
	b := append([]byte("Photoshop 3.0\x00"), "8BIM"...)
	b = append(b, 0x04, 0x04, 0, 0) // resource 0x0404 (IPTC-NAA), empty name
	b = binary.BigEndian.AppendUint32(b, uint32(len(rec)))
	return append(b, rec...)
}

// exifAPP1 is the payload of an EXIF APP1 segment (big-endian TIFF) with
// Make, Model, Orientation and a GPS IFD holding 48°51'24.51"N 2°21'3.1"E.
func exifAPP1(orientation uint16) []byte {
	be := binary.BigEndian
	type entry struct {
		tag, typ uint16
		count    uint32
		data     []byte // inline when 4 bytes or fewer
	}
	ascii := func(s string) []byte { return append([]byte(s), 0) }
	rationals := func(v ...uint32) []byte {
		var b []byte
		for _, x := range v {
			b = be.AppendUint32(b, x)
		}
		return b
	}
	// ifd writes entries at offset start (TIFF-relative), values after them.
	ifd := func(start int, es []entry, next func(valuesEnd int) []byte) []byte {
		head := be.AppendUint16(nil, uint16(len(es)))
		valOff := start + 2 + 12*len(es) + 4
		var vals []byte
		for _, e := range es {
			head = be.AppendUint16(head, e.tag)
			head = be.AppendUint16(head, e.typ)
			head = be.AppendUint32(head, e.count)
			if len(e.data) <= 4 {
				head = append(head, append(e.data, make([]byte, 4-len(e.data))...)...)
				continue
			}
			head = be.AppendUint32(head, uint32(valOff+len(vals)))
			vals = append(vals, e.data...)
			if len(vals)%2 != 0 {
				vals = append(vals, 0)
			}
		}
		head = be.AppendUint32(head, 0) // no next IFD
		out := append(head, vals...)
		if next != nil {
			out = append(out, next(start+len(out))...)
		}
		return out
	}
	const ifd0Start = 8
	gps := func(at int) []byte {
		return ifd(at, []entry{
			{0x0000, 1, 4, []byte{2, 2, 0, 0}},
			{0x0001, 2, 2, ascii("N")},
			{0x0002, 5, 3, rationals(48, 1, 51, 1, 2451, 100)},
			{0x0003, 2, 2, ascii("E")},
			{0x0004, 5, 3, rationals(2, 1, 21, 1, 31, 10)},
		}, nil)
	}
	// The GPS IFD follows IFD0 and its values; its offset is only known
	// once IFD0 is laid out, and IFD0's size does not depend on it.
	es := []entry{
		{0x010F, 2, uint32(len(fixtureMake) + 1), ascii(fixtureMake)},
		{0x0110, 2, uint32(len(fixtureModel) + 1), ascii(fixtureModel)},
		{0x0112, 3, 1, be.AppendUint16(nil, orientation)},
		{0x8825, 4, 1, be.AppendUint32(nil, 0)},
	}
	size := len(ifd(ifd0Start, es, nil))
	es[3].data = be.AppendUint32(nil, uint32(ifd0Start+size))
	tiff := append([]byte("MM\x00\x2a"), be.AppendUint32(nil, ifd0Start)...)
	tiff = append(tiff, ifd(ifd0Start, es, gps)...)
	return append([]byte("Exif\x00\x00"), tiff...)
}

// withSegments inserts APP segments (marker, payload) into a JPEG after its
// SOI and JFIF APP0.
func withSegments(t testing.TB, jpg []byte, segs ...[]byte) []byte {
	t.Helper()
	if len(jpg) < 4 || jpg[0] != 0xFF || jpg[1] != 0xD8 {
		t.Fatal("withSegments: not a JPEG")
	}
	at := 2
	if jpg[2] == 0xFF && jpg[3] == 0xE0 {
		at = 4 + int(binary.BigEndian.Uint16(jpg[4:]))
	}
	out := append([]byte{}, jpg[:at]...)
	for _, s := range segs {
		if len(s)+2 > 0xFFFF {
			t.Fatal("withSegments: segment too long")
		}
		out = append(out, s[:2]...)
		out = binary.BigEndian.AppendUint16(out, uint16(len(s)))
		out = append(out, s[2:]...)
	}
	return append(out, jpg[at:]...)
}

// privateJPEG is a w x h JPEG filled with rgb (values in the space of
// profile), carrying EXIF with camera and GPS tags and the given orientation,
// an XMP packet, an IPTC By-line and the ICC profile.
func privateJPEG(t testing.TB, w, h int, rgb color.NRGBA, profile []byte, orientation uint16) []byte {
	t.Helper()
	rgb.A = 255
	ref, err := vips.NewImageFromGoImage(fxSolid(w, h, rgb))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	plain, _, err := ref.ExportJpeg(&vips.JpegExportParams{Quality: 95, StripMetadata: true, SubsampleMode: vips.VipsForeignSubsampleOff})
	if err != nil {
		t.Fatal(err)
	}
	xmp := `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` +
		`<rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:creator>` + fixtureXMP +
		`</dc:creator></rdf:Description></rdf:RDF></x:xmpmeta>`
	return withSegments(t, plain,
		append([]byte{0xFF, 0xE1}, exifAPP1(orientation)...),
		append([]byte{0xFF, 0xE1}, append([]byte("http://ns.adobe.com/xap/1.0/\x00"), xmp...)...),
		append([]byte{0xFF, 0xE2}, append([]byte("ICC_PROFILE\x00\x01\x01"), profile...)...),
		append([]byte{0xFF, 0xED}, iptcAPP13()...),
	)
}

// privacyFixture is the JPEG the API tests upload (testdata/private.jpg):
// Adobe RGB (200, 60, 60) with GPS, camera and XMP.
func privacyFixture(t testing.TB) []byte {
	return privateJPEG(t, 64, 48, color.NRGBA{200, 60, 60, 255}, iccProfile(adobeRGB), 1)
}

// TestPrivacyFixtureFile keeps testdata/private.jpg, which the api package's
// tests upload, equal to what privacyFixture builds (-update rewrites it).
func TestPrivacyFixtureFile(t *testing.T) {
	path := filepath.Join("testdata", "private.jpg")
	want := privacyFixture(t)
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is stale or missing (%v): run go test -run TestPrivacyFixtureFile -update", path, err)
	}
}
