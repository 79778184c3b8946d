package api

import (
	"net/http"

	"github.com/vitrine/vitrine/engine"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// acceptEntry is one media range of an Accept header.
type acceptEntry struct {
	typ, sub string
	q        float64
}

// parseAccept parses an Accept header; malformed ranges are skipped.
func parseAccept(h string) []acceptEntry {
	var out []acceptEntry
	for _, part := range strings.Split(h, ",") {
		fields := strings.Split(part, ";")
		mt := strings.ToLower(strings.TrimSpace(fields[0]))
		typ, sub, ok := strings.Cut(mt, "/")
		if !ok || typ == "" || sub == "" {
			continue
		}
		e := acceptEntry{typ: typ, sub: sub, q: 1}
		for _, p := range fields[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "q") {
				if q, err := strconv.ParseFloat(v, 64); err == nil && q >= 0 && q <= 1 {
					e.q = q
				}
			}
		}
		out = append(out, e)
	}
	return out
}

// acceptQuality is the quality the most specific matching range gives mime.
func acceptQuality(entries []acceptEntry, mime string) float64 {
	typ, sub, _ := strings.Cut(mime, "/")
	best, spec := 0.0, -1
	for _, e := range entries {
		s := -1
		switch {
		case e.typ == typ && e.sub == sub:
			s = 2
		case e.typ == typ && e.sub == "*":
			s = 1
		case e.typ == "*" && e.sub == "*":
			s = 0
		}
		if s > spec {
			best, spec = e.q, s
		}
	}
	return best
}

// exactQuality is the quality of an exact match for mime only (webp, avif
// and jxl are served only when asked for by name, never picked from a
// wildcard).
func exactQuality(entries []acceptEntry, mime string) float64 {
	typ, sub, _ := strings.Cut(mime, "/")
	for _, e := range entries {
		if e.typ == typ && e.sub == sub {
			return e.q
		}
	}
	return 0
}

// imageFormats are the output types: extension to mime type.
var imageFormats = map[string]string{
	"jpg": "image/jpeg", "png": "image/png", "gif": "image/gif",
	"webp": "image/webp", "avif": "image/avif", "jxl": "image/jxl",
}

// outputExtensions are the keys of imageFormats in the order the API lists
// them.
var outputExtensions = []string{"jpg", "png", "gif", "webp", "avif", "jxl"}

// unknownExtension is the 404 for an extension the image cannot be served
// as (Imbo's status: no such resource), listing those it can.
func unknownExtension(ext, original string) error {
	exts := slices.Clone(outputExtensions)
	if !slices.Contains(exts, original) && original != "" {
		exts = append(exts, original)
	}
	return errorf(http.StatusNotFound, "Unknown extension '%s': this image is served as %s (jpeg is jpg), "+
		"or without an extension", ext, strings.Join(exts, ", "))
}

// extOfMime maps stored mime types to extensions.
var extOfMime = map[string]string{
	"image/jpeg": "jpg", "image/png": "png", "image/gif": "gif",
	"image/webp": "webp", "image/avif": "avif", "image/tiff": "tif",
	"image/heic": "heic", "image/jxl": "jxl", "image/svg+xml": "svg",
	"application/pdf": "pdf", "video/mp4": "mp4", "video/quicktime": "mov", "video/webm": "webm",
}

// outputFormat picks the output extension for an image response: the path
// extension wins; otherwise, with content negotiation on, the Accept header;
// the original type is kept whenever it is acceptable at the best quality.
func (c *call) outputFormat(originalMime string) (string, error) {
	if c.ext != "" {
		ext := c.ext
		if ext == "jpeg" {
			ext = "jpg"
		}
		// The stored type is always served by its own extension, also
		// when it is not an output type (tif, heic, svg, pdf).
		if _, ok := imageFormats[ext]; !ok && ext != extOfMime[originalMime] {
			return "", unknownExtension(c.ext, extOfMime[originalMime])
		}
		return ext, nil
	}
	original := extOfMime[originalMime]
	accept := c.r.Header.Get("Accept")
	if accept == "" {
		return original, nil
	}
	c.negotiated = true
	entries := parseAccept(accept)
	type cand struct {
		ext string
		q   float64
	}
	var cands []cand
	for _, ext := range outputExtensions {
		mime := imageFormats[ext]
		q := acceptQuality(entries, mime)
		if ext == "webp" || ext == "avif" || ext == "jxl" {
			q = exactQuality(entries, mime)
		}
		if q > 0 {
			cands = append(cands, cand{ext, q})
		}
	}
	qOrig := acceptQuality(entries, originalMime)
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].q > cands[j].q })
	if qOrig > 0 && (len(cands) == 0 || qOrig >= cands[0].q) {
		return original, nil
	}
	if len(cands) == 0 {
		return "", errorf(http.StatusNotAcceptable, "Not acceptable")
	}
	if !boolOr(c.s.cfg.ContentNegotiateImages, true) {
		// Negotiation is off: the original is served as long as the client
		// takes any image at all.
		return original, nil
	}
	return cands[0].ext, nil
}

// bestFormats are the auto-quality output formats the Accept header allows
// (webp, avif and jxl by name, jpeg also by a wildcard), sorted, when the
// response type was negotiated, the chain asks for auto quality and the
// negotiated format is one of two or more of them: the render then picks
// the smallest that meets the target (engine/README.md, Perceptual quality).
func (c *call) bestFormats(chain engine.Chain, format string) []string {
	if !c.negotiated || c.ext != "" || !chain.WantsQuality() || !boolOr(c.s.cfg.ContentNegotiateImages, true) {
		return nil
	}
	entries := parseAccept(c.r.Header.Get("Accept"))
	var out []string
	for _, ext := range engine.AutoQualityFormats() {
		q := exactQuality(entries, imageFormats[ext])
		if ext == "jpg" {
			q = acceptQuality(entries, imageFormats[ext])
		}
		if q > 0 {
			out = append(out, ext)
		}
	}
	if len(out) < 2 || !slices.Contains(out, format) {
		return nil
	}
	sort.Strings(out)
	return out
}
