package engine

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// SVG input is rendered by libvips through librsvg, which resolves
// references to files and URLs. Before librsvg sees a document, checkSVG
// reads it with Go's XML decoder (which expands no entities and fetches
// nothing) and refuses, naming what it found:
//
//   - a DOCTYPE with an internal subset or a SYSTEM identifier (entity
//     declarations: billion laughs, external entities); only the W3C
//     SVG DTDs' PUBLIC identifiers are accepted, and nothing is fetched;
//   - processing instructions other than the XML declaration
//     (xml-stylesheet);
//   - <script>, <foreignObject>, SVG Tiny's <handler> and <listener>, and
//     any element in the XHTML namespace;
//   - on* event handler attributes and xml:base;
//   - href and xlink:href (on any element: use, image, feImage, a,
//     xi:include, ...) to anything but a #fragment, or, on <image> and
//     <feImage>, a data: URL of a PNG, JPEG, GIF or WebP;
//   - url(...) in attributes and CSS to anything but a #fragment or such a
//     data: URL; CSS @import; CSS escapes (which could spell either);
//   - animations (set, animate) that change an href.
//
// Refusing, rather than stripping, keeps the stored original exactly what
// the client sent and what was checked: an SVG that passes is stored byte
// for byte, and checked again before every render.

// maxSVGDepth bounds element nesting (deeply nested groups cost librsvg
// stack and time for nothing).
const maxSVGDepth = 256

// sniffSVG reports whether data looks like an SVG document: text that starts
// with markup and has an <svg element near the start. checkSVG decides
// whether it is one that may be rendered.
func sniffSVG(data []byte) bool {
	head := data[:min(len(data), 4096)]
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	return bytes.HasPrefix(head, []byte("<")) && bytes.Contains(head, []byte("<svg"))
}

// refusedSVG is the 415 for an SVG that checkSVG refuses.
func refusedSVG(line int, format string, args ...any) error {
	return &Error{Kind: KindUnsupported, Msg: fmt.Sprintf("SVG refused: %s (line %d); scripts, event handlers, "+
		"external references and entity declarations are not accepted", fmt.Sprintf(format, args...), line)}
}

// svgPublicIDs are the DTDs an SVG DOCTYPE may name (they declare no
// entities a document may rely on, and nothing fetches them).
var svgPublicIDs = regexp.MustCompile(`^DOCTYPE\s+svg\s+PUBLIC\s+"-//W3C//DTD SVG [0-9.]+( Tiny| Basic)?//EN"\s+"http://www\.w3\.org/Graphics/SVG/[0-9.]+/DTD/svg[0-9a-z-]+\.dtd"\s*$`)

// cssURL finds url( references in CSS and attribute values.
var cssURL = regexp.MustCompile(`(?i)url\(\s*(?:"([^"]*)"|'([^']*)'|([^)\s]*))`)

// rasterData matches data: URLs of raster images librsvg decodes.
var rasterData = regexp.MustCompile(`(?i)^data:image/(png|jpeg|jpg|gif|webp)[;,]`)

const (
	nsSVG   = "http://www.w3.org/2000/svg"
	nsXHTML = "http://www.w3.org/1999/xhtml"
	nsXML   = "http://www.w3.org/XML/1998/namespace"
)

// checkSVG returns nil for an SVG document librsvg may render without
// touching anything outside it, and a KindUnsupported error naming the first
// thing refused otherwise.
func checkSVG(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	var (
		depth int
		root  bool
		// inStyle is set inside a <style> element, whose text is CSS.
		inStyle bool
	)
	for {
		line, _ := d.InputPos()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				return refusedSVG(se.Line, "not well-formed XML: %s", se.Msg)
			}
			return refusedSVG(line, "not well-formed XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			s := strings.TrimSpace(string(t))
			switch {
			case strings.HasPrefix(s, "DOCTYPE"):
				if strings.Contains(s, "[") || strings.Contains(s, "ENTITY") {
					return refusedSVG(line, "a DOCTYPE that declares entities")
				}
				if s != "DOCTYPE svg" && !svgPublicIDs.MatchString(s) {
					return refusedSVG(line, "a DOCTYPE naming an external DTD")
				}
			default:
				return refusedSVG(line, "a <!%s> declaration", strings.Fields(s + " ?")[0])
			}
		case xml.ProcInst:
			if t.Target != "xml" {
				return refusedSVG(line, "the processing instruction <?%s?>", t.Target)
			}
		case xml.StartElement:
			depth++
			if depth > maxSVGDepth {
				return refusedSVG(line, "elements nested deeper than %d", maxSVGDepth)
			}
			if !root {
				if t.Name.Local != "svg" || (t.Name.Space != nsSVG && t.Name.Space != "") {
					return refusedSVG(line, "the root element is <%s>, not <svg>", t.Name.Local)
				}
				root = true
			}
			if err := checkSVGElement(t, line); err != nil {
				return err
			}
			inStyle = t.Name.Local == "style"
		case xml.EndElement:
			depth--
			inStyle = false
		case xml.CharData:
			if inStyle {
				if err := checkCSS(string(t), line); err != nil {
					return err
				}
			}
		}
	}
	if !root {
		return refusedSVG(1, "no <svg> element")
	}
	return nil
}

// checkSVGElement checks one element's name and attributes.
func checkSVGElement(t xml.StartElement, line int) error {
	name := strings.ToLower(t.Name.Local)
	switch {
	case t.Name.Space == nsXHTML:
		return refusedSVG(line, "the XHTML element <%s>", t.Name.Local)
	case name == "script" || name == "foreignobject" || name == "handler" || name == "listener":
		return refusedSVG(line, "a <%s> element", t.Name.Local)
	}
	for _, a := range t.Attr {
		local := strings.ToLower(a.Name.Local)
		switch {
		case strings.HasPrefix(local, "on"):
			return refusedSVG(line, "the event handler attribute %s on <%s>", a.Name.Local, t.Name.Local)
		case a.Name.Space == nsXML && local == "base":
			return refusedSVG(line, "xml:base on <%s>", t.Name.Local)
		case local == "href":
			if !internalRef(a.Value, name == "image" || name == "feimage") {
				return refusedSVG(line, "the reference %q on <%s> (only #fragments and data: URLs of raster images are accepted)",
					clip(a.Value), t.Name.Local)
			}
		case local == "style":
			if err := checkCSS(a.Value, line); err != nil {
				return err
			}
		case local == "attributename" && (name == "set" || strings.HasPrefix(name, "animate")):
			if v := strings.ToLower(a.Value); v == "href" || strings.HasSuffix(v, ":href") {
				return refusedSVG(line, "an animation of %s on <%s>", a.Value, t.Name.Local)
			}
		default:
			if err := checkURLs(a.Value, line); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkCSS refuses @import, escapes and external url() in CSS text.
func checkCSS(css string, line int) error {
	if strings.Contains(strings.ToLower(css), "@import") {
		return refusedSVG(line, "a CSS @import")
	}
	if strings.Contains(css, `\`) {
		return refusedSVG(line, "a CSS escape")
	}
	return checkURLs(css, line)
}

// checkURLs refuses url() references other than #fragments and raster data.
func checkURLs(s string, line int) error {
	for _, m := range cssURL.FindAllStringSubmatch(s, -1) {
		ref := m[1] + m[2] + m[3]
		if !internalRef(ref, true) {
			return refusedSVG(line, "the reference url(%s) (only #fragments and data: URLs of raster images are accepted)", clip(ref))
		}
	}
	return nil
}

// internalRef reports whether ref points inside the document (#fragment),
// or, when data is allowed, is a data: URL of a raster image.
func internalRef(ref string, data bool) bool {
	ref = strings.TrimSpace(ref)
	if strings.HasPrefix(ref, "#") {
		return true
	}
	return data && rasterData.MatchString(ref)
}

// clip shortens a value quoted in a message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
