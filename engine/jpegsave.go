package engine

import "github.com/davidbyttow/govips/v2/vips"

// jpegParams returns the JPEG encoder settings for quality q.
//
// Why these: optimised Huffman tables (a second pass over the coefficients)
// make the output 4-8% smaller at the same quality and pixels for about 0.3 ms
// on a 200x200 thumbnail; chroma subsampling stays libvips' automatic choice
// (4:2:0 below quality 90, as imgproxy and browsers expect). Trellis
// quantisation and scan optimisation need mozjpeg, which Debian's
// libjpeg-turbo is not: libvips ignores them there, so they are not asked for.
// README's Performance section has the measurements.
func jpegParams(q int, out *Output) *vips.JpegExportParams {
	return &vips.JpegExportParams{
		Quality:        q,
		Interlace:      out.Progressive,
		StripMetadata:  out.Strip,
		OptimizeCoding: true,
	}
}
