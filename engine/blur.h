// The blur kernels of blur_motion.c, blur_radial.c and blur_adaptive.c
// (their shared row spans are blur_span.c's): each reads the pixels of a
// width x height image with bands interleaved samples a pixel and writes
// its result, of the same size and format, into dst (the engine's pooled
// pixel buffers), on the calling thread.

#ifndef VITRINE_BLUR_H
#define VITRINE_BLUR_H

#include <stdint.h>
#include <vips/vips.h>

// vt_motion_u8: out(x, y) = sum of w[i] * in(x + dx[i], y + dy[i]) over the
// n taps, the weights normalised (in 256ths), positions outside the image
// taking the nearest edge pixel. in is 8-bit.
int vt_motion_u8(const VipsPel *in, VipsPel *dst, int width, int height, int bands,
	const int *dx, const int *dy, const double *w, int n);

// vt_radial: the average of in over rotations about (cx, cy) spanning k of
// na angle steps, nr radii. fmt is uchar, ushort or float.
int vt_radial(const VipsPel *in, VipsPel *dst, int width, int height, int bands, VipsBandFormat fmt,
	double cx, double cy, int na, int nr, int k);

// vt_adaptive_u8: the adaptive blur of an 8-bit sRGB (3 bands) or grey (1)
// image, its gaussian libvips' gaussmat(sigma, min_ampl).
int vt_adaptive_u8(const VipsPel *in, VipsPel *dst, int width, int height, int bands, double sigma, double min_ampl);

#endif
