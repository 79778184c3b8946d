package engine

import (
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// TestJPEGOptimisedHuffman checks that JPEG output is smaller than libvips'
// default encoding of the same pixels at the same quality.
func TestJPEGOptimisedHuffman(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := source(t, 320, 240, "png", false)
	got := run(t, e, src, "jpg", Env{})
	img := mustLoad(t, src)
	defer img.Close()
	plain, _, err := img.ExportJpeg(&vips.JpegExportParams{Quality: DefaultJPEGQuality})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data) >= len(plain) {
		t.Errorf("output %d bytes, libvips' default Huffman tables %d", len(got.Data), len(plain))
	}
}
