package engine

import (
	"fmt"

	"github.com/davidbyttow/govips/v2/vips"
)

// Vector and document inputs: SVG (rendered by librsvg) and the first page
// of a PDF (rendered by poppler), each through libvips' loader when this
// build has it. Uploads take them only when the operator turns them on
// (uploads.svg, uploads.pdf); stored ones are rendered like any image, at
// their declared size (SVG: its width and height at 72 DPI; PDF: the page
// at Uploads.PDFDPI), within the size limits.

// DefaultPDFDPI is the resolution a PDF page is rendered at when
// Uploads.PDFDPI is 0: an A4 page becomes 1240 x 1754 pixels.
const DefaultPDFDPI = 150

// MaxPDFDPI bounds Uploads.PDFDPI.
const MaxPDFDPI = 600

// loaderTypes are the libvips loaders vector and document inputs need.
var loaderTypes = map[string]vips.ImageType{"svg": vips.ImageTypeSVG, "pdf": vips.ImageTypePDF}

// loaderNames name those loaders in messages.
var loaderNames = map[string]string{"svg": "SVG loader (librsvg)", "pdf": "PDF loader (poppler)"}

// checkInput refuses, before libvips parses anything, an SVG that checkSVG
// refuses and an SVG or PDF whose loader this libvips lacks.
func checkInput(f format, data []byte) error {
	if t, ok := loaderTypes[f.ext]; ok && !vips.IsTypeSupported(t) {
		return &Error{Kind: KindUnsupported, Msg: fmt.Sprintf("Unsupported image type: %s (this server's libvips has no %s)",
			f.mime, loaderNames[f.ext])}
	}
	if f.ext == "svg" {
		return checkSVG(data)
	}
	return nil
}

// loadParams sets on p what every load of an f needs: the PDF page's
// resolution (page 0, the first, is libvips' default).
func (e *Engine) loadParams(f format, p *vips.ImportParams) *vips.ImportParams {
	if f.ext == "pdf" {
		p.Density.Set(e.cfg.Uploads.PDFDPI)
	}
	return p
}

// loadChecked opens data (any input type) with p after checkInput, as
// decode does, for images a step loads (a watermark).
func (e *Engine) loadChecked(data []byte, p *vips.ImportParams) (*vips.ImageRef, error) {
	f, ok := sniff(data)
	if !ok {
		return nil, unsupported(data)
	}
	if err := checkInput(f, data); err != nil {
		return nil, err
	}
	return vips.LoadImageFromBuffer(data, e.loadParams(f, p))
}
