package engine

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"net/http"
	"strings"
	"testing"
)

// testPDF writes a PDF of pages pages, each 200 x 100 points (2.78 x 1.39
// inches): page 1 a red rectangle on the left half, the others blue all
// over. The cross-reference table is computed, so poppler reads it as it is.
func testPDF(pages int) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	b.WriteString("%PDF-1.4\n")
	kids := make([]string, pages)
	for i := range kids {
		kids[i] = fmt.Sprintf("%d 0 R", 3+2*i)
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), pages))
	for i := 0; i < pages; i++ {
		content := "0 0 1 rg 0 0 200 100 re f"
		if i == 0 {
			content = "1 1 1 rg 0 0 200 100 re f 1 0 0 rg 0 0 100 100 re f"
		}
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents %d 0 R >>", 4+2*i))
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

// TestPDFFirstPage uploads a three-page PDF: the image is the first page at
// uploads.pdfDPI, one frame; rendering shows page 1's drawing.
func TestPDFFirstPage(t *testing.T) {
	t.Parallel()
	pdf := testPDF(3)
	e := newTestEngine(t, Config{Uploads: Uploads{PDF: true, PDFDPI: 144}})
	info, err := e.Inspect(context.Background(), pdf)
	// 200 x 100 points at 144 DPI: 400 x 200 pixels.
	if err != nil || info.Ext != "pdf" || info.Mime != "application/pdf" || info.Width != 400 || info.Height != 200 || info.Frames != 1 {
		t.Fatalf("Inspect: %+v, %v", info, err)
	}
	c, _ := e.ParseChain([]string{"resize:width=200"})
	res, err := e.Process(context.Background(), pdf, Request{Chain: c, Source: info})
	if err != nil {
		t.Fatal(err)
	}
	if res.Width != 200 || res.Height != 100 {
		t.Fatalf("resize: %dx%d", res.Width, res.Height)
	}
	writeLook(t, "pdf."+res.Ext, res.Data)
	if got := pixel(t, res.Data, 50, 50); !near(got, color.NRGBA{255, 0, 0, 255}, 8) {
		t.Errorf("left half %v, want page 1's red", got)
	}
	if got := pixel(t, res.Data, 150, 50); !near(got, color.NRGBA{255, 255, 255, 255}, 8) {
		t.Errorf("right half %v, want page 1's white", got)
	}
	// The default resolution: 150 DPI.
	info, err = newTestEngine(t, Config{Uploads: Uploads{PDF: true}}).Inspect(context.Background(), pdf)
	if err != nil || info.Width != 417 || info.Height != 208 {
		t.Errorf("150 DPI: %+v, %v", info, err)
	}
	// Off by default, and the size limits apply to the rendered page.
	_, err = newTestEngine(t, Config{}).Inspect(context.Background(), pdf)
	if err == nil || err.Error() != "Unsupported image type: application/pdf (uploads.pdf is off)" {
		t.Errorf("default config: %v", err)
	}
	small := newTestEngine(t, Config{Uploads: Uploads{PDF: true, PDFDPI: 600}, Limits: Limits{MaxPixels: 500_000}})
	var ee *Error
	if _, err := small.Inspect(context.Background(), pdf); !asError(err, &ee) || ee.HTTPStatus() != http.StatusRequestEntityTooLarge {
		t.Errorf("1667x833 page over 500000 pixels: %v", err)
	}
	if err := (Config{Uploads: Uploads{PDFDPI: 601}}).Validate(); err == nil {
		t.Error("pdfDPI 601 accepted")
	}
}
