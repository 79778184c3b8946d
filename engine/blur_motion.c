// The motion blur of blur.go (vt_motion_u8, declared in blur.h). libvips
// has no operation for a line of taps, and composing one from its
// operations cost a pass over the image per tap; here it is one pass over
// an image held in memory, on the calling thread, like every libvips
// pipeline of the engine (concurrency 1).

#include <math.h>
#include <string.h>

#include "blur_span.h"

// vt_motion_clamped computes columns [x0, x1) of an output row one sample
// at a time, each tap's column clamped to the image (the edge columns).
static void vt_motion_clamped(const VipsPel *const *rows, const int *dx, const uint16_t *w, int n,
	int bands, int width, int x0, int x1, VipsPel *out) {
	int x, b, i;
	for (x = x0; x < x1; x++)
		for (b = 0; b < bands; b++) {
			unsigned s = 128;
			for (i = 0; i < n; i++)
				s += w[i] * rows[i][VIPS_CLIP(0, x + dx[i], width - 1) * bands + b];
			out[x * bands + b] = (VipsPel) (s >> 8);
		}
}

int vt_motion_u8(const VipsPel *in, VipsPel *dst, int width, int height, int bands,
	const int *tx, const int *ty, const double *tw, int nt) {
	int minx = 0, maxx = 0, lo, hi, y, i, n = 0;
	size_t line = (size_t) width * bands;
	const VipsPel **rows, **src;
	uint32_t *q;
	uint16_t *w;
	int *dx, *dy;

	if (nt < 1) {
		vips_error("vitrine", "motion blur: no taps");
		return -1;
	}
	// The weights in 256ths; taps they round to nothing are dropped.
	q = g_new(uint32_t, nt);
	w = g_new(uint16_t, nt);
	dx = g_new(int, 2 * nt);
	dy = dx + nt;
	vt_weights(tw, nt, 256, q);
	for (i = 0; i < nt; i++)
		if (q[i]) {
			dx[n] = tx[i];
			dy[n] = ty[i];
			w[n++] = (uint16_t) q[i];
		}
	for (i = 0; i < n; i++) {
		minx = VIPS_MIN(minx, dx[i]);
		maxx = VIPS_MAX(maxx, dx[i]);
	}
	// Columns [lo, hi) read every tap inside the image.
	lo = VIPS_MIN(-minx, width);
	hi = VIPS_MAX(width - maxx, lo);
	rows = g_new(const VipsPel *, 2 * n);
	src = rows + n;
	for (y = 0; y < height; y++) {
		VipsPel *out = dst + (size_t) y * line;
		for (i = 0; i < n; i++) {
			rows[i] = in + (size_t) VIPS_CLIP(0, y + dy[i], height - 1) * line;
			src[i] = rows[i] + (size_t) (lo + dx[i]) * bands;
		}
		vt_motion_span(src, w, n, (size_t) (hi - lo) * bands, out + (size_t) lo * bands);
		vt_motion_clamped(rows, dx, w, n, bands, width, 0, lo, out);
		vt_motion_clamped(rows, dx, w, n, bands, width, hi, width, out);
	}
	g_free(rows);
	g_free(dx);
	g_free(w);
	g_free(q);
	return 0;
}
