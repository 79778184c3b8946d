// The adaptive blur of blur.go (vt_adaptive_u8, declared in blur.h).

#include <math.h>
#include <string.h>

#include "blur_span.h"

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
