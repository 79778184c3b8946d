// The rotational blur of blur.go (vt_radial, declared in blur.h): one
// pass over an image held in memory, on the calling thread, where libvips'
// own operations would resample the image once per rotation.

#include <math.h>
#include <string.h>

#include "blur_span.h"

// Rotational blur.
//
// The image is resampled to polar coordinates, na angles (columns) by nr
// radii (rows, one a pixel): a rotation is then a shift along a row, and
// the average over k rotations a box along it, wrapping round. The result
// is resampled back, bilinearly both ways. Positions outside the image take
// the nearest edge pixel, so corners stay bright. The polar image is made
// VT_RADIAL_ROWS rows at a time and consumed at once by the output pixels
// whose radius falls in those rows (an annulus), so it never exists whole:
// a few megabytes of floats instead of one plane of the image's size.

#define VT_RADIAL_ROWS 32

typedef struct {
	const VipsPel *src;
	VipsPel *dst;
	int w, h, bands, na, nr, k;
	double cx, cy;
	const double *cosv, *sinv; // per angle column
	float *polar;              // VT_RADIAL_ROWS + 1 rows of na + 1 columns (the last is the first again)
	float *tmp;                // one row of na columns
	float *rad, *ang;          // a row's pixels' polar coordinates
} vt_radial_t;

static inline __attribute__((always_inline)) float vt_load(const VipsPel *p, VipsBandFormat fmt, size_t i) {
	switch (fmt) {
	case VIPS_FORMAT_UCHAR:
		return p[i];
	case VIPS_FORMAT_USHORT:
		return ((const uint16_t *) p)[i];
	default:
		return ((const float *) p)[i];
	}
}

static inline __attribute__((always_inline)) void vt_store(VipsPel *p, VipsBandFormat fmt, size_t i, float v) {
	switch (fmt) {
	case VIPS_FORMAT_UCHAR:
		p[i] = (VipsPel) VIPS_CLIP(0, v + 0.5f, 255);
		break;
	case VIPS_FORMAT_USHORT:
		((uint16_t *) p)[i] = (uint16_t) VIPS_CLIP(0, v + 0.5f, 65535);
		break;
	default:
		((float *) p)[i] = v;
	}
}

// vt_box_wrap replaces each column of a polar row by the mean of the k
// columns centred on it, wrapping round, and sets column na to column 0.
static void vt_box_wrap(float *row, float *tmp, int na, int bands, int k) {
	int h2 = k / 2, a, b, j, ip = (h2 + 1) % na, im = ((-h2 % na) + na) % na;
	double s[4] = {0}, inv = 1.0 / k;
	memcpy(tmp, row, sizeof(float) * na * bands);
	for (j = -h2; j <= h2; j++)
		for (b = 0; b < bands; b++)
			s[b] += tmp[(((j % na) + na) % na) * bands + b];
	for (a = 0; a < na; a++) {
		const float *in = tmp + ip * bands, *out = tmp + im * bands;
		for (b = 0; b < bands; b++) {
			row[a * bands + b] = (float) (s[b] * inv);
			s[b] += in[b] - out[b];
		}
		if (++ip == na)
			ip = 0;
		if (++im == na)
			im = 0;
	}
	for (b = 0; b < bands; b++)
		row[na * bands + b] = row[b];
}

// vt_polar_coords computes, for n pixels of a row from x0 on, dy from the
// centre vertically and cx the centre's column, each pixel's radius and
// angle in columns of na per turn, in [0, na): branch-free single
// precision, every division done whatever the branch, so that it
// vectorises. The arctangent is that of the smaller over the larger
// coordinate by Cephes' atanf polynomial (reduced to [0, tan(pi/8)], error
// about 1e-7 radians), then the octant. To vectorise, GCC needs to know
// that sqrtf need not set errno and the selects may compute both sides
// (no traps, no NaN, no signed zeros: true of pixel positions); cgo allows
// none of those flags, hence the pragma, for this function only.
#pragma GCC push_options
#pragma GCC optimize("no-math-errno", "no-trapping-math", "finite-math-only", "no-signed-zeros")
VT_CLONES
static void vt_polar_coords(float *restrict rad, float *restrict ang, int n, float x0, float cx, float dy, float na) {
	int i;
	for (i = 0; i < n; i++) {
		float dx = x0 + i - cx, ax = fabsf(dx), ay = fabsf(dy);
		float t = fminf(ax, ay) / fmaxf(fmaxf(ax, ay), 1e-30f);
		float w = (t - 1) / (t + 1);
		int big = t > 0.41421356f;
		float u = big ? w : t, z = u * u;
		float a = (big ? (float) M_PI_4 : 0) + (((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z - 3.33329491539e-1f) * z * u + u;
		a = ay > ax ? (float) M_PI_2 - a : a;
		a = dx < 0 ? (float) M_PI - a : a;
		a = dy < 0 ? 2 * (float) M_PI - a : a;
		a *= na / (2 * (float) M_PI);
		ang[i] = a >= na ? a - na : a;
		rad[i] = sqrtf(dx * dx + dy * dy);
	}
}
#pragma GCC pop_options

// vt_radial_span writes the output pixels of row y, columns [x0, x1), whose
// radius lies in polar rows [r0, r0 + VT_RADIAL_ROWS).
static inline __attribute__((always_inline)) void vt_radial_span(const vt_radial_t *c, int r0, int y, int x0, int x1, VipsBandFormat fmt) {
	size_t stride = (size_t) (c->na + 1) * c->bands;
	int i, b, bands = c->bands;
	if (x1 <= x0)
		return;
	vt_polar_coords(c->rad, c->ang, x1 - x0, x0, (float) c->cx, (float) (y - c->cy), c->na);
	for (i = 0; i < x1 - x0; i++) {
		float r = c->rad[i], fa = c->ang[i], ta, tr;
		int ri = (int) r, ai;
		const float *p0, *p1;
		if (ri < r0 || ri >= r0 + VT_RADIAL_ROWS || ri >= c->nr - 1)
			continue;
		ai = VIPS_CLIP(0, (int) fa, c->na - 1);
		ta = fa - ai;
		tr = r - ri;
		p0 = c->polar + (size_t) (ri - r0) * stride + (size_t) ai * bands;
		p1 = p0 + stride;
		for (b = 0; b < bands; b++) {
			float top = p0[b] + (p0[b + bands] - p0[b]) * ta;
			float bot = p1[b] + (p1[b + bands] - p1[b]) * ta;
			vt_store(c->dst, fmt, ((size_t) y * c->w + x0 + i) * bands + b, top + (bot - top) * tr);
		}
	}
}

// vt_radial_block makes polar rows r0 .. r0 + VT_RADIAL_ROWS (one more than
// it owns, for interpolating) and writes the output pixels whose radius
// lies in the rows it owns.
static inline __attribute__((always_inline)) void vt_radial_block(const vt_radial_t *c, int r0, VipsBandFormat fmt) {
	size_t stride = (size_t) (c->na + 1) * c->bands;
	int last = VIPS_MIN(r0 + VT_RADIAL_ROWS, c->nr - 1), w = c->w, h = c->h, bands = c->bands, rr, a, b, y;
	for (rr = r0; rr <= last; rr++) {
		float *row = c->polar + (size_t) (rr - r0) * stride;
		for (a = 0; a < c->na; a++) {
			double x = VIPS_CLIP(0, c->cx + rr * c->cosv[a], w - 1), yy = VIPS_CLIP(0, c->cy + rr * c->sinv[a], h - 1);
			int x0 = (int) x, y0 = (int) yy;
			size_t i00 = ((size_t) y0 * w + x0) * bands;
			size_t i01 = i00 + (x0 + 1 < w ? bands : 0), i10 = i00 + (y0 + 1 < h ? (size_t) w * bands : 0);
			size_t i11 = i10 + (i01 - i00);
			float fx = (float) (x - x0), fy = (float) (yy - y0);
			for (b = 0; b < bands; b++) {
				float top = vt_load(c->src, fmt, i00 + b) + (vt_load(c->src, fmt, i01 + b) - vt_load(c->src, fmt, i00 + b)) * fx;
				float bot = vt_load(c->src, fmt, i10 + b) + (vt_load(c->src, fmt, i11 + b) - vt_load(c->src, fmt, i10 + b)) * fx;
				row[a * bands + b] = top + (bot - top) * fy;
			}
		}
		vt_box_wrap(row, c->tmp, c->na, bands, c->k);
	}
	// The output pixels of the annulus: on each row, the columns within
	// the outer circle and outside the inner one (a pixel wider, each
	// pixel's own radius deciding).
	for (y = 0; y < h; y++) {
		double dy = y - c->cy, ro = (double) (r0 + VT_RADIAL_ROWS) * (r0 + VT_RADIAL_ROWS) - dy * dy;
		double ri = (double) r0 * r0 - dy * dy, outer, inner;
		int a0, a1, b0, b1;
		if (ro <= 0)
			continue;
		outer = sqrt(ro) + 1;
		a0 = VIPS_MAX(0, (int) floor(c->cx - outer));
		b1 = VIPS_MIN(w, (int) ceil(c->cx + outer) + 1);
		if (ri <= 0) {
			vt_radial_span(c, r0, y, a0, b1, fmt);
			continue;
		}
		inner = sqrt(ri) - 1;
		a1 = VIPS_MIN(w, (int) ceil(c->cx - inner) + 1);
		b0 = VIPS_MAX(0, (int) floor(c->cx + inner));
		if (b0 <= a1) {
			vt_radial_span(c, r0, y, a0, b1, fmt);
			continue;
		}
		vt_radial_span(c, r0, y, a0, a1, fmt);
		vt_radial_span(c, r0, y, b0, b1, fmt);
	}
}

int vt_radial(const VipsPel *in, VipsPel *dst, int w, int h, int bands, VipsBandFormat fmt,
	double cx, double cy, int na, int nr, int k) {
	vt_radial_t c = {0};
	double *trig;
	int a, r0;

	if ((fmt != VIPS_FORMAT_UCHAR && fmt != VIPS_FORMAT_USHORT && fmt != VIPS_FORMAT_FLOAT) || bands < 1 || bands > 4 ||
		na < 1 || nr < 2 || k < 1) {
		vips_error("vitrine", "rotational blur: uchar, ushort or float image of 1 to 4 bands needed");
		return -1;
	}
	c.src = in;
	c.dst = dst;
	c.w = w;
	c.h = h;
	c.bands = bands;
	c.na = na;
	c.nr = nr;
	c.k = k;
	c.cx = cx;
	c.cy = cy;
	trig = g_new(double, 2 * na);
	for (a = 0; a < na; a++) {
		trig[a] = cos(2 * M_PI * a / na);
		trig[na + a] = sin(2 * M_PI * a / na);
	}
	c.cosv = trig;
	c.sinv = trig + na;
	c.polar = g_new(float, (size_t) (VT_RADIAL_ROWS + 1) * (na + 1) * c.bands);
	c.tmp = g_new(float, (size_t) na * c.bands);
	c.rad = g_new(float, w);
	c.ang = g_new(float, w);
	// One copy of the loop per format, so that loads and stores compile to
	// the format's own instructions.
	for (r0 = 0; r0 < nr - 1; r0 += VT_RADIAL_ROWS)
		switch (fmt) {
		case VIPS_FORMAT_UCHAR:
			vt_radial_block(&c, r0, VIPS_FORMAT_UCHAR);
			break;
		case VIPS_FORMAT_USHORT:
			vt_radial_block(&c, r0, VIPS_FORMAT_USHORT);
			break;
		default:
			vt_radial_block(&c, r0, VIPS_FORMAT_FLOAT);
		}
	g_free(c.tmp);
	g_free(c.rad);
	g_free(c.ang);
	g_free(c.polar);
	g_free(trig);
	return 0;
}
