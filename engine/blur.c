// Blur kernels for blur.go (declared in blur.h). libvips has no operation
// for a motion blur's line of taps or a rotational blur, and composing them
// from its operations cost a pass (or a resample) over the image per tap;
// here each is one pass over an image held in memory, on the calling
// thread, like every libvips pipeline of the engine (concurrency 1).

#include <math.h>
#include <string.h>

#include "blur.h"

// Row loops are compiled for AVX-512 and AVX2 as well as the baseline, the
// copy chosen at load time by the CPU (GCC's function multiversioning,
// x86-64 only).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VT_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define VT_CLONES
#endif

// Motion blur.
//
// vt_motion_span computes len samples of an output row whose taps all lie
// inside the image: for each 64 samples, the sum of w[i] * src[i][k] over
// the taps in two registers of thirty-two 16-bit lanes (the weights add up
// to 256, so 255 * 256 fits), rounded. Written with GCC vector types, so
// it is SIMD at any optimisation level.
typedef uint16_t vt_u16x32 __attribute__((vector_size(64)));
typedef uint8_t vt_u8x32 __attribute__((vector_size(32)));

// vt_span_rest computes samples [k, len) of a span one at a time (the
// tail after the last whole vector).
static inline void vt_span_rest(const VipsPel *const *src, const uint16_t *w, int n, size_t k, size_t len, VipsPel *out) {
	int i;
	for (; k < len; k++) {
		unsigned s = 128;
		for (i = 0; i < n; i++)
			s += w[i] * src[i][k];
		out[k] = (VipsPel) (s >> 8);
	}
}

VT_CLONES
static void vt_motion_span(const VipsPel *const *src, const uint16_t *w, int n, size_t len, VipsPel *out) {
	size_t k = 0;
	int i;
	for (; k + 64 <= len; k += 64) {
		vt_u16x32 s0 = {0}, s1 = {0};
		vt_u8x32 p0, p1;
		s0 += 128;
		s1 += 128;
		for (i = 0; i < n; i++) {
			memcpy(&p0, src[i] + k, 32);
			memcpy(&p1, src[i] + k + 32, 32);
			s0 += __builtin_convertvector(p0, vt_u16x32) * w[i];
			s1 += __builtin_convertvector(p1, vt_u16x32) * w[i];
		}
		p0 = __builtin_convertvector(s0 >> 8, vt_u8x32);
		p1 = __builtin_convertvector(s1 >> 8, vt_u8x32);
		memcpy(out + k, &p0, 32);
		memcpy(out + k + 32, &p1, 32);
	}
	vt_span_rest(src, w, n, k, len, out);
}

// vt_sym_span is vt_motion_span for a symmetric mask of odd n taps (a
// gaussian): each pair of taps the same distance from the centre is added
// before its one multiply.
VT_CLONES
static void vt_sym_span(const VipsPel *const *src, const uint16_t *w, int n, size_t len, VipsPel *out) {
	size_t k = 0;
	int i, c = n / 2;
	for (; k + 64 <= len; k += 64) {
		vt_u16x32 s0 = {0}, s1 = {0};
		vt_u8x32 a0, a1, b0, b1;
		s0 += 128;
		s1 += 128;
		for (i = 0; i < c; i++) {
			memcpy(&a0, src[i] + k, 32);
			memcpy(&a1, src[i] + k + 32, 32);
			memcpy(&b0, src[n - 1 - i] + k, 32);
			memcpy(&b1, src[n - 1 - i] + k + 32, 32);
			s0 += (__builtin_convertvector(a0, vt_u16x32) + __builtin_convertvector(b0, vt_u16x32)) * w[i];
			s1 += (__builtin_convertvector(a1, vt_u16x32) + __builtin_convertvector(b1, vt_u16x32)) * w[i];
		}
		memcpy(&a0, src[c] + k, 32);
		memcpy(&a1, src[c] + k + 32, 32);
		s0 += __builtin_convertvector(a0, vt_u16x32) * w[c];
		s1 += __builtin_convertvector(a1, vt_u16x32) * w[c];
		a0 = __builtin_convertvector(s0 >> 8, vt_u8x32);
		a1 = __builtin_convertvector(s1 >> 8, vt_u8x32);
		memcpy(out + k, &a0, 32);
		memcpy(out + k + 32, &a1, 32);
	}
	vt_span_rest(src, w, n, k, len, out);
}

// vt_span_wide is vt_motion_span with the weights in 65536ths, summed in
// 32-bit lanes: for masks of many taps, where 256ths would round each
// weight by a large part of itself (half the speed).
typedef uint32_t vt_u32x16 __attribute__((vector_size(64)));
typedef uint8_t vt_u8x16 __attribute__((vector_size(16)));

VT_CLONES
static void vt_span_wide(const VipsPel *const *src, const uint32_t *w, int n, size_t len, VipsPel *out) {
	size_t k = 0;
	int i;
	for (; k + 32 <= len; k += 32) {
		vt_u32x16 s0 = {0}, s1 = {0};
		vt_u8x16 p0, p1;
		s0 += 1u << 15;
		s1 += 1u << 15;
		for (i = 0; i < n; i++) {
			memcpy(&p0, src[i] + k, 16);
			memcpy(&p1, src[i] + k + 16, 16);
			s0 += __builtin_convertvector(p0, vt_u32x16) * w[i];
			s1 += __builtin_convertvector(p1, vt_u32x16) * w[i];
		}
		p0 = __builtin_convertvector(s0 >> 16, vt_u8x16);
		p1 = __builtin_convertvector(s1 >> 16, vt_u8x16);
		memcpy(out + k, &p0, 16);
		memcpy(out + k + 16, &p1, 16);
	}
	for (; k < len; k++) {
		uint32_t s = 1u << 15;
		for (i = 0; i < n; i++)
			s += w[i] * src[i][k];
		out[k] = (VipsPel) (s >> 16);
	}
}

// vt_weights turns a mask into integer weights adding up to total (each
// rounded half away from zero, the largest taking what the rounding left
// over, so that flat areas keep their exact value), for vt_motion_span and
// vt_sym_span (256) or vt_span_wide (65536).
static void vt_weights(const double *m, int n, uint32_t total, uint32_t *q) {
	double sum = 0;
	int i, top = 0;
	uint32_t got = 0;
	for (i = 0; i < n; i++)
		sum += m[i];
	for (i = 0; i < n; i++) {
		q[i] = (uint32_t) lround(m[i] / sum * total);
		got += q[i];
		if (m[i] > m[top])
			top = i;
	}
	q[top] += total - got;
}

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

// Adaptive blur.
//
// The blur of blur.go's adaptive method, fused into one pass over the rows
// of an 8-bit sRGB or grey image: out = blurred + (in - blurred) * edge,
// where blurred is the gaussian of libvips' integer mask (gaussmat with
// sigma and min_ampl, separable; vt_gauss_pass) and edge the Sobel strength
// of the grey image (the grey as libvips' colourspace makes it, |Gx| + |Gy|
// as libvips' uchar Sobel), blurred by gaussmat(1, 0.2) and scaled by 4, so
// that an edge of 64 levels or more counts as fully sharp. Every
// intermediate is a row: a few rows of grey and edge strength live in
// rings, nothing the image's size.

#define VT_RING 8

// The grey conversion, libvips' own (vips_colourspace from sRGB to B_W):
// each sample to linear light (vips_col_sRGB2scRGB_8), Y = 0.2 R + 0.7 G +
// 0.1 B, and Y back to 8 bits (vips_col_scRGB2BW_8). Here the three terms
// come from tables of Y in 65536ths (times 256, for the rounding) and the
// last step from a table over Y, both built by calling libvips itself, so
// the grey is libvips' to within a level where Y falls on a rounding edge.
// That matters: the Sobel strength doubles any difference, and the blend
// multiplies it by the distance between the image and its blur.
static uint32_t vt_term[3][256];
static uint8_t vt_grey16[1 << 16];

static void vt_grey_tables(void) {
	static gsize done = 0;
	static const double weight[3] = {0.2, 0.7, 0.1};
	int i, b, g, og;
	float R, G, B;
	if (!g_once_init_enter(&done))
		return;
	for (i = 0; i < 256; i++) {
		vips_col_sRGB2scRGB_8(i, i, i, &R, &G, &B);
		for (b = 0; b < 3; b++)
			vt_term[b][i] = (uint32_t) lrint(weight[b] * R * 65535 * 256);
	}
	for (i = 0; i < 1 << 16; i++) {
		float y = i / 65535.0f;
		vips_col_scRGB2BW_8(y, y, y, &g, &og);
		vt_grey16[i] = (uint8_t) VIPS_CLIP(0, g, 255);
	}
	g_once_init_leave(&done, 1);
}

typedef struct {
	const VipsPel *in;
	int width, height, bands;
	size_t line;
	int ew[3], esum;            // the edge blur's integer weights
	uint32_t recip;             // for dividing by esum (VT_DIV)
	VipsPel *grey[VT_RING];     // grey rows, ring keyed by row
	int greyRow[VT_RING];
	VipsPel *edge[VT_RING];     // edge strength rows, blurred across
	int edgeRow[VT_RING];
	int16_t *sob;               // scratch: one row of Sobel strength
} vt_adaptive_t;

static const VipsPel *vt_adaptive_grey(vt_adaptive_t *c, int y) {
	int slot, x;
	const VipsPel *p;
	VipsPel *q;
	y = VIPS_CLIP(0, y, c->height - 1);
	slot = y % VT_RING;
	if (c->greyRow[slot] == y)
		return c->grey[slot];
	p = c->in + (size_t) y * c->line;
	q = c->grey[slot];
	if (c->bands == 1)
		memcpy(q, p, c->width);
	else
		for (x = 0; x < c->width; x++, p += 3) {
			uint32_t lum = (vt_term[0][p[0]] + vt_term[1][p[1]] + vt_term[2][p[2]] + 128) >> 8;
			q[x] = vt_grey16[VIPS_MIN(lum, 65535)];
		}
	c->greyRow[slot] = y;
	return q;
}

// The row loops below are written for the vectoriser (the package's C is
// compiled at -O3): no clamping inside, edge columns apart.

// vt_sobel_at is the Sobel strength at column x of rows a, b, d (above, at,
// below), columns clamped: |Gx| + |Gy| as libvips' uchar path computes it
// (each gradient halved into a byte around 128, then doubled).
static inline int vt_sobel_at(const VipsPel *a, const VipsPel *b, const VipsPel *d, int x, int w) {
	int l = x > 0 ? x - 1 : 0, r = x + 1 < w ? x + 1 : w - 1;
	int gx = (a[r] + 2 * b[r] + d[r]) - (a[l] + 2 * b[l] + d[l]);
	int gy = (a[l] + 2 * a[x] + a[r]) - (d[l] + 2 * d[x] + d[r]);
	gx = VIPS_CLIP(-256, gx, 254);
	gy = VIPS_CLIP(-256, gy, 254);
	return VIPS_MIN(255, abs(gx) + abs(gy));
}

VT_CLONES
static void vt_sobel_row(const VipsPel *restrict a, const VipsPel *restrict b, const VipsPel *restrict d, int16_t *restrict s, int w) {
	int x;
	for (x = 1; x < w - 1; x++) {
		int gx = (a[x + 1] + 2 * b[x + 1] + d[x + 1]) - (a[x - 1] + 2 * b[x - 1] + d[x - 1]);
		int gy = (a[x - 1] + 2 * a[x] + a[x + 1]) - (d[x - 1] + 2 * d[x] + d[x + 1]);
		gx = gx < -256 ? -256 : gx > 254 ? 254 : gx;
		gy = gy < -256 ? -256 : gy > 254 ? 254 : gy;
		gx = (gx < 0 ? -gx : gx) + (gy < 0 ? -gy : gy);
		s[x] = (int16_t) (gx < 255 ? gx : 255);
	}
	s[0] = (int16_t) vt_sobel_at(a, b, d, 0, w);
	s[w - 1] = (int16_t) vt_sobel_at(a, b, d, w - 1, w);
}

// VT_DIV is n / e rounded, for 0 <= n <= 255 * e + e / 2, as a multiply
// and shift by recip = 2^20 / e + 1 (exact for e up to 72).
#define VT_DIV(n, e, recip) ((((uint32_t) (n) + (uint32_t) (e) / 2) * (recip)) >> 20)

VT_CLONES
static void vt_edge_blur_row(const int16_t *restrict s, VipsPel *restrict q, int w, const int *ew, int esum, uint32_t recip) {
	int x, w0 = ew[0], w1 = ew[1], w2 = ew[2];
	for (x = 1; x < w - 1; x++)
		q[x] = (VipsPel) VT_DIV(w0 * s[x - 1] + w1 * s[x] + w2 * s[x + 1], esum, recip);
	q[0] = (VipsPel) VT_DIV(w0 * s[0] + w1 * s[0] + w2 * s[VIPS_MIN(1, w - 1)], esum, recip);
	q[w - 1] = (VipsPel) VT_DIV(w0 * s[VIPS_MAX(w - 2, 0)] + w1 * s[w - 1] + w2 * s[w - 1], esum, recip);
}

// vt_edge_weight is the blend weight of each pixel of a row: the edge
// strength blurred down the column, times 4, clipped, repeated for each
// of bands samples.
VT_CLONES
static void vt_edge_weight(const VipsPel *restrict e0, const VipsPel *restrict e1, const VipsPel *restrict e2,
	VipsPel *restrict m, int w, int bands, const int *ew, int esum, uint32_t recip) {
	int x, w0 = ew[0], w1 = ew[1], w2 = ew[2];
	if (bands == 1)
		for (x = 0; x < w; x++) {
			uint32_t v = 4 * VT_DIV(w0 * e0[x] + w1 * e1[x] + w2 * e2[x], esum, recip);
			m[x] = (VipsPel) (v < 255 ? v : 255);
		}
	else
		for (x = 0; x < w; x++) {
			uint32_t v = 4 * VT_DIV(w0 * e0[x] + w1 * e1[x] + w2 * e2[x], esum, recip);
			m[3 * x] = m[3 * x + 1] = m[3 * x + 2] = (VipsPel) (v < 255 ? v : 255);
		}
}

// vt_blend_row: out = blurred + (in - blurred) * m / 255, rounded (the
// division by 255 as a multiply and shift, exact over the range).
VT_CLONES
static void vt_blend_row(const VipsPel *restrict in, const VipsPel *restrict bl, const VipsPel *restrict m, VipsPel *restrict out, size_t n) {
	size_t k;
	for (k = 0; k < n; k++) {
		uint32_t t = bl[k] * (255u - m[k]) + in[k] * (uint32_t) m[k] + 127;
		out[k] = (VipsPel) ((t * 32897u) >> 23);
	}
}

// vt_adaptive_edge is the edge strength of row y, blurred across.
static const VipsPel *vt_adaptive_edge(vt_adaptive_t *c, int y) {
	int slot;
	y = VIPS_CLIP(0, y, c->height - 1);
	slot = y % VT_RING;
	if (c->edgeRow[slot] != y) {
		vt_sobel_row(vt_adaptive_grey(c, y - 1), vt_adaptive_grey(c, y), vt_adaptive_grey(c, y + 1), c->sob, c->width);
		vt_edge_blur_row(c->sob, c->edge[slot], c->width, c->ew, c->esum, c->recip);
		c->edgeRow[slot] = y;
	}
	return c->edge[slot];
}

// Masks of more taps than this take the 65536ths (vt_span_wide).
#define VT_NARROW_TAPS 16

// vt_gauss_pass runs one pass of the gaussian over len samples: in 256ths
// for masks of up to VT_NARROW_TAPS (by pairs when the weights are
// symmetric, as a gaussmat's are), else in 65536ths.
static void vt_gauss_pass(const VipsPel *const *src, const uint16_t *w16, const uint32_t *w32, int n, size_t len, VipsPel *out) {
	int i, sym = n % 2;
	for (i = 0; sym && i < n / 2; i++)
		sym = w16[i] == w16[n - 1 - i];
	if (n > VT_NARROW_TAPS)
		vt_span_wide(src, w32, n, len, out);
	else if (sym)
		vt_sym_span(src, w16, n, len, out);
	else
		vt_motion_span(src, w16, n, len, out);
}

int vt_adaptive_u8(const VipsPel *in, VipsPel *dst, int width, int height, int bands, double sigma, double min_ampl) {
	VipsImage *gm = NULL, *em = NULL;
	vt_adaptive_t c = {0};
	const VipsPel **rows = NULL;
	uint16_t *gw = NULL;
	uint32_t *gw32 = NULL;
	VipsPel *vrow = NULL, *brow = NULL, *eb = NULL;
	int gn, gr, i, x, y, b, ret = -1;
	const double one = 1;

	if (bands != 1 && bands != 3) {
		vips_error("vitrine", "adaptive blur: grey or sRGB image needed");
		return -1;
	}
	vt_grey_tables();
	// gaussmat refuses a sigma under 1e-6, whose mask would be the one
	// tap at the centre anyway.
	if ((sigma >= 1e-6 && vips_gaussmat(&gm, sigma, min_ampl, "separable", TRUE, "precision", VIPS_PRECISION_INTEGER, NULL)) ||
		vips_gaussmat(&em, 1, 0.2, "separable", TRUE, "precision", VIPS_PRECISION_INTEGER, NULL))
		goto done;
	if (em->Xsize != 3) {
		vips_error("vitrine", "adaptive blur: unexpected edge mask");
		goto done;
	}
	gn = gm ? gm->Xsize : 1;
	gr = gn / 2;
	gw = g_new(uint16_t, gn);
	gw32 = g_new(uint32_t, gn);
	vt_weights(gm ? (double *) VIPS_IMAGE_ADDR(gm, 0, 0) : &one, gn, gn <= VT_NARROW_TAPS ? 256 : 65536, gw32);
	for (i = 0; i < gn; i++)
		gw[i] = (uint16_t) gw32[i];
	for (i = 0; i < 3; i++) {
		c.ew[i] = (int) lrint(((double *) VIPS_IMAGE_ADDR(em, 0, 0))[i]);
		c.esum += c.ew[i];
	}
	if (c.esum < 1 || c.esum > 72) {
		vips_error("vitrine", "adaptive blur: unexpected edge mask");
		goto done;
	}
	c.recip = (1u << 20) / c.esum + 1;
	c.in = in;
	c.width = width;
	c.height = height;
	c.bands = bands;
	c.line = (size_t) width * bands;
	for (i = 0; i < VT_RING; i++) {
		c.grey[i] = g_malloc(width);
		c.greyRow[i] = -1;
		c.edge[i] = g_malloc(width);
		c.edgeRow[i] = -1;
	}
	c.sob = g_new(int16_t, width);
	rows = g_new(const VipsPel *, gn);
	vrow = g_malloc((size_t) (width + 2 * gr) * bands);
	brow = g_malloc(c.line);
	eb = g_malloc(c.line);
	for (y = 0; y < height; y++) {
		const VipsPel *e0 = vt_adaptive_edge(&c, y - 1), *e1 = vt_adaptive_edge(&c, y), *e2 = vt_adaptive_edge(&c, y + 1);
		const VipsPel *o = in + (size_t) y * c.line;
		VipsPel *out = dst + (size_t) y * c.line;
		// The gaussian: down the columns into vrow, whose gr pixels
		// each side repeat the edge pixels, then across.
		for (i = 0; i < gn; i++)
			rows[i] = in + (size_t) VIPS_CLIP(0, y + i - gr, height - 1) * c.line;
		vt_gauss_pass(rows, gw, gw32, gn, c.line, vrow + (size_t) gr * bands);
		for (x = 0; x < gr; x++)
			for (b = 0; b < bands; b++) {
				vrow[x * bands + b] = vrow[gr * bands + b];
				vrow[(gr + width + x) * bands + b] = vrow[(gr + width - 1) * bands + b];
			}
		for (i = 0; i < gn; i++)
			rows[i] = vrow + (size_t) i * bands;
		vt_gauss_pass(rows, gw, gw32, gn, c.line, brow);
		vt_edge_weight(e0, e1, e2, eb, width, bands, c.ew, c.esum, c.recip);
		vt_blend_row(o, brow, eb, out, c.line);
	}
	ret = 0;
done:
	for (i = 0; i < VT_RING; i++) {
		g_free(c.grey[i]);
		g_free(c.edge[i]);
	}
	g_free(c.sob);
	g_free(rows);
	g_free(vrow);
	g_free(brow);
	g_free(eb);
	g_free(gw);
	g_free(gw32);
	VIPS_UNREF(gm);
	VIPS_UNREF(em);
	return ret;
}
