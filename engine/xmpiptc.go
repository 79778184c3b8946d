package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"strings"
)

// iptcNames are the IPTC IIM record 2 datasets kept, by number.
var iptcNames = map[byte]string{
	5: "ObjectName", 25: "Keywords", 40: "SpecialInstructions", 55: "DateCreated",
	80: "By-line", 85: "By-lineTitle", 90: "City", 95: "Province-State", 101: "Country-PrimaryLocationName",
	105: "Headline", 110: "Credit", 115: "Source", 116: "CopyrightNotice", 120: "Caption-Abstract",
	122: "Writer-Editor",
}

// readIPTC returns the IPTC IIM datasets of a JPEG's Photoshop (APP13)
// block as "IPTC:<name>"; Keywords is always a list.
func readIPTC(data []byte) map[string]any {
	out := map[string]any{}
	block := photoshopIPTC(data)
	for p := 0; p+5 <= len(block) && block[p] == 0x1c; {
		rec, ds, n := block[p+1], block[p+2], int(binary.BigEndian.Uint16(block[p+3:]))
		p += 5
		if n&0x8000 != 0 || p+n > len(block) {
			break // extended lengths are not used for text datasets
		}
		name, ok := iptcNames[ds]
		if rec == 2 && ok {
			v := strings.TrimSpace(string(block[p : p+n]))
			key := "IPTC:" + name
			switch {
			case ds == 25:
				list, _ := out[key].([]any)
				out[key] = append(list, v)
			case ds == 55 && len(v) == 8:
				out[key] = v[:4] + "-" + v[4:6] + "-" + v[6:]
			default:
				out[key] = v
			}
		}
		p += n
	}
	return out
}

// jpegSegment returns the payload of a JPEG's first marker segment that
// starts with prefix, or nil; it stops at the start of the scan.
func jpegSegment(data []byte, marker byte, prefix string) []byte {
	if !bytes.HasPrefix(data, []byte{0xff, 0xd8}) {
		return nil
	}
	for p := 2; p+4 <= len(data) && data[p] == 0xff; {
		m, n := data[p+1], int(binary.BigEndian.Uint16(data[p+2:]))
		if m == 0xda || n < 2 || p+2+n > len(data) {
			return nil
		}
		seg := data[p+4 : p+2+n]
		p += 2 + n
		if m == marker && bytes.HasPrefix(seg, []byte(prefix)) {
			return seg
		}
	}
	return nil
}

// photoshopIPTC finds the IPTC resource (8BIM 0x0404) of a JPEG's APP13
// segment, or nil.
func photoshopIPTC(data []byte) []byte {
	seg := jpegSegment(data, 0xed, "Photoshop 3.0\x00")
	if seg == nil {
		return nil
	}
	res := seg[14:]
	for q := 0; q+12 <= len(res) && string(res[q:q+4]) == "8BIM"; {
		id := binary.BigEndian.Uint16(res[q+4:])
		nameLen := int(res[q+6])
		q += 7 + nameLen
		if nameLen%2 == 0 {
			q++ // the Pascal name, with its length byte, is padded to even
		}
		if q+4 > len(res) {
			return nil
		}
		size := int(binary.BigEndian.Uint32(res[q:]))
		q += 4
		if size < 0 || q+size > len(res) {
			return nil
		}
		if id == 0x0404 {
			return res[q : q+size]
		}
		q += size + size&1
	}
	return nil
}

// xmpPrefixes names the usual XMP namespaces by their customary prefix.
var xmpPrefixes = map[string]string{
	"http://purl.org/dc/elements/1.1/":                   "dc",
	"http://ns.adobe.com/xap/1.0/":                       "xmp",
	"http://ns.adobe.com/xap/1.0/rights/":                "xmpRights",
	"http://ns.adobe.com/photoshop/1.0/":                 "photoshop",
	"http://ns.adobe.com/exif/1.0/":                      "exif",
	"http://ns.adobe.com/tiff/1.0/":                      "tiff",
	"http://iptc.org/std/Iptc4xmpCore/1.0/xmlns/":        "Iptc4xmpCore",
	"http://ns.adobe.com/lightroom/1.0/":                 "lr",
	"http://ns.adobe.com/xap/1.0/mm/":                    "xmpMM",
	"http://cipa.jp/exif/1.0/":                           "exifEX",
	"http://ns.adobe.com/camera-raw-settings/1.0/":       "crs",
	"http://www.w3.org/1999/02/22-rdf-syntax-ns#":        "rdf",
	"adobe:ns:meta/":                                     "x",
	"http://ns.adobe.com/photoshop/1.0/panorama-profile": "photoshop",
}

const rdfNS = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"

// readXMP returns the simple properties of the image's XMP packet as
// "XMP:<prefix>:<name>": attributes of rdf:Description and elements with
// text; rdf:Bag and rdf:Seq become lists, rdf:Alt its first entry.
// Structures nested deeper are left out.
func readXMP(data []byte) map[string]any {
	out := map[string]any{}
	start := bytes.Index(data, []byte("<x:xmpmeta"))
	if start < 0 {
		return out
	}
	end := bytes.Index(data[start:], []byte("</x:xmpmeta>"))
	if end < 0 {
		return out
	}
	dec := xml.NewDecoder(bytes.NewReader(data[start : start+end+len("</x:xmpmeta>")]))
	var stack []xml.Name
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		switch t := tok.(type) {
		case xml.StartElement:
			stack = append(stack, t.Name)
			text.Reset()
			if t.Name.Space == rdfNS && t.Name.Local == "Description" {
				for _, a := range t.Attr {
					if k := xmpKey(a.Name); k != "" {
						out[k] = a.Value
					}
				}
			}
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			xmpEnd(out, stack, strings.TrimSpace(text.String()))
			text.Reset()
			stack = stack[:len(stack)-1]
		}
	}
}

// xmpEnd stores the value of the element closing at the top of stack.
func xmpEnd(out map[string]any, stack []xml.Name, v string) {
	n := len(stack)
	top := stack[n-1]
	switch {
	case v == "":
	case top.Space == rdfNS && top.Local == "li" && n >= 4 && stack[n-4].Space == rdfNS && stack[n-4].Local == "Description":
		k, kind := xmpKey(stack[n-3]), stack[n-2].Local
		if k == "" {
			return
		}
		if kind == "Alt" {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
			return
		}
		list, _ := out[k].([]any)
		out[k] = append(list, v)
	case top.Space != rdfNS && n >= 2 && stack[n-2].Space == rdfNS && stack[n-2].Local == "Description":
		if k := xmpKey(top); k != "" {
			out[k] = v
		}
	}
}

// xmpKey names a property, or "" for RDF's and XML's own names.
func xmpKey(n xml.Name) string {
	if n.Space == rdfNS || n.Space == "xmlns" || n.Space == "" || n.Space == "http://www.w3.org/XML/1998/namespace" {
		return ""
	}
	prefix, ok := xmpPrefixes[n.Space]
	if !ok {
		prefix = n.Space[strings.LastIndexAny(strings.TrimRight(n.Space, "/#"), "/#:")+1:]
		prefix = strings.TrimRight(prefix, "/#")
	}
	// Why: metadata keys may not hold dots (api/README).
	return strings.ReplaceAll("XMP:"+prefix+":"+n.Local, ".", "_")
}
