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

// The drawing's size is bounded before librsvg renders anything, since a
// render cannot be stopped inside librsvg and its cost grows faster than the
// document: one 5 MB <path> of 580,000 segments ran for half an hour, and a
// 3 KB document of 30 levels of doubled <use> expands to a billion elements.
// The work of a document is its elements plus its path points (each
// coordinate pair of path data, polyline and polygon points), counted after
// every <use> is expanded into what it refers to.
const (
	maxSVGElements = 100_000 // elements as written
	maxSVGUses     = 10_000  // <use> elements as written
	maxSVGUseDepth = 16      // <use> of a <use> of ...
	maxSVGWork     = 100_000 // elements + path points, <use> expanded
)

// sniffSVG reports whether data looks like an SVG document: text that starts
// with markup and has an <svg element near the start. checkSVG decides
// whether it is one that may be rendered.
func sniffSVG(data []byte) bool {
	head := data[:min(len(data), 4096)]
	if isUTF16(head) {
		head = utf16Head(head)
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	return bytes.HasPrefix(head, []byte("<")) && (bytes.Contains(head, []byte("<svg")) || prefixedSVG.Match(head))
}

// prefixedSVG finds a namespace-prefixed root such as <svg:svg.
var prefixedSVG = regexp.MustCompile(`<[A-Za-z_][A-Za-z0-9_.-]*:svg[\s>/]`)

// isUTF16 reports whether data starts with a UTF-16 byte order mark.
func isUTF16(data []byte) bool {
	return bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff})
}

// utf16Head is the ASCII of a UTF-16 head (each code unit's low byte, for
// sniffing only).
func utf16Head(data []byte) []byte {
	lo := 2 // little-endian: the low byte comes first
	if data[0] == 0xfe {
		lo = 3
	}
	out := make([]byte, 0, len(data)/2)
	for i := lo; i < len(data); i += 2 {
		out = append(out, data[i])
	}
	return out
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
	if isUTF16(data) {
		return refusedSVG(1, "the document is UTF-16; save it as UTF-8")
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	var (
		depth int
		root  bool
		// inStyle is set inside a <style> element, whose text is CSS.
		inStyle bool
		work    svgWork
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
			if err := work.start(t, line); err != nil {
				return err
			}
			inStyle = t.Name.Local == "style"
		case xml.EndElement:
			depth--
			inStyle = false
			work.end()
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
	return work.check()
}

// svgWork counts a document's work (see maxSVGWork) as checkSVG reads it:
// each open element's own count and the <use> references inside it, and,
// for each element with an id, what a <use> of it costs before expansion.
type svgWork struct {
	open     []svgPart
	ids      map[string]svgPart
	doc      svgPart
	elements int
	// uses are the ids every <use> refers to, in document order, so the
	// uses inside an element are one range of it.
	uses []string
}

// svgPart is the work of an element and everything in it, and the range of
// svgWork.uses inside it (not yet expanded).
type svgPart struct {
	id               string
	work             int
	usesFrom, usesTo int
}

func (w *svgWork) start(t xml.StartElement, line int) error {
	w.elements++
	if w.elements > maxSVGElements {
		return refusedSVG(line, "more than %d elements", maxSVGElements)
	}
	p := svgPart{work: 1, usesFrom: len(w.uses)}
	name := strings.ToLower(t.Name.Local)
	for _, a := range t.Attr {
		switch local := strings.ToLower(a.Name.Local); {
		case local == "id" && a.Name.Space == "":
			p.id = a.Value
		case local == "d" && name == "path", local == "points" && (name == "polyline" || name == "polygon"):
			p.work += countNumbers(a.Value) / 2
		case local == "href" && name == "use" && strings.HasPrefix(strings.TrimSpace(a.Value), "#"):
			if len(w.uses) == maxSVGUses {
				return refusedSVG(line, "more than %d <use> elements", maxSVGUses)
			}
			w.uses = append(w.uses, strings.TrimPrefix(strings.TrimSpace(a.Value), "#"))
		}
	}
	if p.work > maxSVGWork {
		return refusedSVG(line, "a <%s> of %d points (at most %d in a document)", t.Name.Local, p.work-1, maxSVGWork)
	}
	w.open = append(w.open, p)
	return nil
}

func (w *svgWork) end() {
	if len(w.open) == 0 {
		return
	}
	p := w.open[len(w.open)-1]
	p.usesTo = len(w.uses)
	w.open = w.open[:len(w.open)-1]
	if p.id != "" {
		if w.ids == nil {
			w.ids = map[string]svgPart{}
		}
		if _, dup := w.ids[p.id]; !dup {
			w.ids[p.id] = p
		}
	}
	if len(w.open) == 0 {
		w.doc = p
		return
	}
	w.open[len(w.open)-1].work += p.work
}

// check expands every <use> of the document and refuses a drawing whose
// work is over maxSVGWork, a <use> chain deeper than maxSVGUseDepth and a
// <use> that refers to itself.
func (w *svgWork) check() error {
	type expanded struct{ work, depth int }
	done := map[string]expanded{}
	visiting := map[string]bool{}
	var expand func(id string) (work, depth int, err error)
	expand = func(id string) (int, int, error) {
		if c, ok := done[id]; ok {
			return c.work, c.depth, nil
		}
		if visiting[id] {
			return 0, 0, refusedSVG(1, "a <use> of #%s inside #%s itself", clip(id), clip(id))
		}
		p, ok := w.ids[id]
		if !ok {
			return 0, 0, nil // librsvg draws nothing for it
		}
		visiting[id] = true
		work, depth, err := w.sum(p, expand)
		if err != nil {
			return 0, 0, err
		}
		delete(visiting, id)
		done[id] = expanded{work, depth}
		return work, depth, nil
	}
	_, _, err := w.sum(w.doc, expand)
	return err
}

// sum is p's work with each of its <use> elements expanded, and the depth of
// its deepest chain of <use>.
func (w *svgWork) sum(p svgPart, expand func(string) (int, int, error)) (work, depth int, _ error) {
	work = p.work
	for _, id := range w.uses[p.usesFrom:p.usesTo] {
		c, d, err := expand(id)
		if err != nil {
			return 0, 0, err
		}
		if depth = max(depth, d+1); depth > maxSVGUseDepth {
			return 0, 0, refusedSVG(1, "<use> elements referring to <use> elements more than %d deep", maxSVGUseDepth)
		}
		if work += c; work > maxSVGWork {
			return 0, 0, refusedSVG(1, "a drawing of more than %d elements and path points once its <use> elements are expanded", maxSVGWork)
		}
	}
	return work, depth, nil
}

// countNumbers counts the numbers in path data or a points list.
func countNumbers(s string) int {
	n, in, dot := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if !in {
				n, in, dot = n+1, true, false
			}
		case c == '.':
			if in && dot { // "1.5.5" is 1.5 and .5
				n++
			}
			if !in {
				n, in = n+1, true
			}
			dot = true
		case c == 'e' || c == 'E':
			// an exponent continues the number
		default:
			in, dot = false, false
		}
	}
	return n
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
