package engine

import "github.com/davidbyttow/govips/v2/vips"

// jpegParams returns the JPEG encoder settings for quality q.
//
// Why these: optimised Huffman tables (a second pass over the coefficients)
// make the output 6-7% smaller at the same quality and pixels, for about
// 0.5 ms of CPU on a 200x200 thumbnail and 1.2 ms at 800x450 (some 3-5% of
// the request); imgproxy sets the same. Chroma subsampling stays libvips'
// automatic choice, 4:2:0 below quality 90: 4:4:4 is 40-45% larger. Trellis
// quantisation and scan optimisation need mozjpeg, which Debian's
// libjpeg-turbo is not: libvips ignores them there, so they are not asked for.
// e2e/README.md's Performance section has the measurements.
func jpegParams(q int, out *Output) *vips.JpegExportParams {
	return &vips.JpegExportParams{
		Quality:        q,
		Interlace:      out.Progressive,
		StripMetadata:  out.Strip,
		OptimizeCoding: true,
	}
}
