// SSIMULACRA 2, written from its published description (the JPEG XL
// project's tools/ssimulacra2.cc, Jon Sneyers 2022-2023): both images to
// linear RGB, then at six scales (each a 2x2 box average of the previous, in
// linear RGB) to XYB (the opsin absorbance matrix, cube root with bias,
// rescaled to about 0..1 with B-Y); per scale and XYB channel an SSIM map
// without the luminance denominator and two edge maps (artifacts: the
// distorted image has edges where the reference is smooth; detail lost:
// the reverse), all on images blurred with a recursive Gaussian of sigma
// 1.5; the 1-norm and 4-norm of each of the 54 maps, a weighted sum of the
// 108 norms, and the published polynomial and power transform to a score.
//
// Loops run over whole rows with restrict pointers so that GCC vectorises
// them; the vertical blur runs over all columns of a row at once.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ssimulacra2.h"
#include "blur_span.h"

#define VT_SCALES 6

// The recursive Gaussian (Charalampidis 2016, as libjxl's gauss_blur.cc
// builds it): three second-order IIR filters summed, run forwards with
// the input taken symmetrically at n-N-1 and n+N-1 (zero outside).
typedef struct {
	float n2[3], d1[3];
	int radius;
} vt_s2_rgauss;

static void vt_s2_rgauss_init(vt_s2_rgauss *rg, double sigma) {
	const double pi = 3.141592653589793238;
	double radius = round(3.2795 * sigma + 0.2546);
	double pd = pi / (2.0 * radius);
	double omega[3] = {pd, 3.0 * pd, 5.0 * pd};
	double p1 = 1.0 / tan(0.5 * omega[0]), p3 = -1.0 / tan(0.5 * omega[1]), p5 = 1.0 / tan(0.5 * omega[2]);
	double r1 = p1 * p1 / sin(omega[0]), r3 = -p3 * p3 / sin(omega[1]), r5 = p5 * p5 / sin(omega[2]);
	double rho[3];
	for (int i = 0; i < 3; i++)
		rho[i] = exp(-0.5 * sigma * sigma * omega[i] * omega[i]) / radius;
	double d13 = p1 * r3 - r1 * p3, d35 = p3 * r5 - r3 * p5, d51 = p5 * r1 - r5 * p1;
	double z15 = d35 / d13, z35 = d51 / d13;
	// beta = A^-1 gamma, A = [[p1 p3 p5] [r1 r3 r5] [z15 z35 1]].
	double a[3][3] = {{p1, p3, p5}, {r1, r3, r5}, {z15, z35, 1}};
	double g[3] = {1, radius * radius - sigma * sigma, z15 * rho[0] + z35 * rho[1] + rho[2]};
	double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
		     a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
	double inv[3][3] = {
	    {(a[1][1] * a[2][2] - a[1][2] * a[2][1]) / det, (a[0][2] * a[2][1] - a[0][1] * a[2][2]) / det, (a[0][1] * a[1][2] - a[0][2] * a[1][1]) / det},
	    {(a[1][2] * a[2][0] - a[1][0] * a[2][2]) / det, (a[0][0] * a[2][2] - a[0][2] * a[2][0]) / det, (a[0][2] * a[1][0] - a[0][0] * a[1][2]) / det},
	    {(a[1][0] * a[2][1] - a[1][1] * a[2][0]) / det, (a[0][1] * a[2][0] - a[0][0] * a[2][1]) / det, (a[0][0] * a[1][1] - a[0][1] * a[1][0]) / det},
	};
	rg->radius = (int) radius;
	for (int i = 0; i < 3; i++) {
		double beta = inv[i][0] * g[0] + inv[i][1] * g[1] + inv[i][2] * g[2];
		rg->n2[i] = (float) (-beta * cos(omega[i] * (radius + 1.0)));
		rg->d1[i] = (float) (-2.0 * cos(omega[i]));
	}
}

// vt_s2_blur_rows runs the filter along each row of in into out: the
// borders with bounds checks, the interior without.
static void vt_s2_blur_rows(const vt_s2_rgauss *rg, const float *in, float *out, int w, int h) {
	const int N = rg->radius;
	const float n0 = rg->n2[0], n1 = rg->n2[1], n2 = rg->n2[2];
	const float d0 = rg->d1[0], d1 = rg->d1[1], d2 = rg->d1[2];
	for (int y = 0; y < h; y++) {
		const float *row = in + (size_t) y * w;
		float *o = out + (size_t) y * w;
		float a0 = 0, a1 = 0, a2 = 0, b0 = 0, b1 = 0, b2 = 0; // prev, prev2
		int n = -N + 1;
#define VT_S2_STEP(sum)                                                                                                \
	do {                                                                                                           \
		float v0 = n0 * (sum) - d0 * a0 - b0, v1 = n1 * (sum) - d1 * a1 - b1, v2 = n2 * (sum) - d2 * a2 - b2; \
		b0 = a0, b1 = a1, b2 = a2, a0 = v0, a1 = v1, a2 = v2;                                                  \
		if (n >= 0)                                                                                            \
			o[n] = v0 + v1 + v2;                                                                           \
	} while (0)
		for (; n < w && (n - N - 1 < 0 || n + N - 1 >= w); n++) {
			int l = n - N - 1, r = n + N - 1;
			float sum = (l >= 0 ? row[l] : 0.0f) + (r < w ? row[r] : 0.0f);
			VT_S2_STEP(sum);
		}
		for (; n + N - 1 < w; n++) {
			float sum = row[n - N - 1] + row[n + N - 1];
			VT_S2_STEP(sum);
		}
		for (; n < w; n++) {
			int l = n - N - 1;
			float sum = l >= 0 ? row[l] : 0.0f;
			VT_S2_STEP(sum);
		}
#undef VT_S2_STEP
	}
}

// vt_s2_blur_step is one output row of the vertical filter over all columns:
// prev1/prev2 hold the previous two outputs of each of the three filters
// and are replaced by the new ones.
VT_CLONES
void vt_s2_blur_step(const float *restrict top, const float *restrict bottom, float *restrict *p1, float *restrict *p2,
			 const vt_s2_rgauss *rg, float *restrict out, int w) {
	for (int k = 0; k < 3; k++) {
		const float n2 = rg->n2[k], d1 = rg->d1[k];
		float *restrict a = p1[k], *restrict b = p2[k];
		if (top && bottom) {
			for (int x = 0; x < w; x++)
				b[x] = n2 * (top[x] + bottom[x]) - d1 * a[x] - b[x];
		} else if (bottom) {
			for (int x = 0; x < w; x++)
				b[x] = n2 * bottom[x] - d1 * a[x] - b[x];
		} else if (top) {
			for (int x = 0; x < w; x++)
				b[x] = n2 * top[x] - d1 * a[x] - b[x];
		} else {
			for (int x = 0; x < w; x++)
				b[x] = -d1 * a[x] - b[x];
		}
		// The new output (in b) becomes prev1, prev1 becomes prev2.
		p1[k] = b;
		p2[k] = a;
	}
	if (out) {
		const float *restrict a = p1[0], *restrict b = p1[1], *restrict c = p1[2];
		for (int x = 0; x < w; x++)
			out[x] = a[x] + b[x] + c[x];
	}
}

// vt_s2_blur blurs the w x h plane in into out; tmp is a plane and ring 6 rows.
static void vt_s2_blur(const vt_s2_rgauss *rg, const float *in, float *out, float *tmp, float *ring, int w, int h) {
	vt_s2_blur_rows(rg, in, tmp, w, h);
	memset(ring, 0, sizeof(float) * 6 * (size_t) w);
	float *p1[3] = {ring, ring + w, ring + 2 * (size_t) w};
	float *p2[3] = {ring + 3 * (size_t) w, ring + 4 * (size_t) w, ring + 5 * (size_t) w};
	const int N = rg->radius;
	for (int n = -N + 1; n < h; n++) {
		int t = n - N - 1, b = n + N - 1;
		vt_s2_blur_step(t >= 0 ? tmp + (size_t) t * w : NULL, b < h ? tmp + (size_t) b * w : NULL, p1, p2, rg,
			     n >= 0 ? out + (size_t) n * w : NULL, w);
	}
}

// vt_s2_srgb_to_linear fills lin (3 planes) from packed 8-bit sRGB.
static void vt_s2_srgb_to_linear(const uint8_t *src, float *lin, int w, int h) {
	float lut[256];
	for (int i = 0; i < 256; i++) {
		double v = i / 255.0;
		lut[i] = (float) (v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4));
	}
	size_t n = (size_t) w * h;
	for (size_t i = 0; i < n; i++) {
		lin[i] = lut[src[3 * i]];
		lin[n + i] = lut[src[3 * i + 1]];
		lin[2 * n + i] = lut[src[3 * i + 2]];
	}
}

// vt_s2_downsample halves lin (3 planes, w x h) into out, averaging 2x2
// blocks, the last row or column repeated when the size is odd.
static void vt_s2_downsample(const float *in, float *out, int w, int h, int ow, int oh) {
	for (int c = 0; c < 3; c++) {
		const float *p = in + (size_t) c * w * h;
		float *o = out + (size_t) c * ow * oh;
		for (int oy = 0; oy < oh; oy++) {
			const float *r0 = p + (size_t) (2 * oy) * w;
			const float *r1 = p + (size_t) (2 * oy + 1 < h ? 2 * oy + 1 : h - 1) * w;
			for (int ox = 0; ox < ow; ox++) {
				int x0 = 2 * ox, x1 = 2 * ox + 1 < w ? 2 * ox + 1 : w - 1;
				o[(size_t) oy * ow + ox] = 0.25f * (r0[x0] + r0[x1] + r1[x0] + r1[x1]);
			}
		}
	}
}

// vt_s2_cbrt is the cube root of x >= 0 to float precision: an estimate
// from the exponent bits and two Newton steps (libm's cbrtf was most of
// the cost; this one vectorises).
static inline float vt_s2_cbrt(float x) {
	union {
		float f;
		uint32_t u;
	} v = {.f = x};
	v.u = v.u / 3 + 709921077u;
	float y = v.f;
	for (int i = 0; i < 2; i++)
		y = (2.0f * y + x / (y * y)) * (1.0f / 3.0f);
	return y;
}

// vt_s2_to_xyb converts linear RGB planes to the positive XYB SSIMULACRA 2
// works in.
VT_CLONES
void vt_s2_to_xyb(const float *restrict lin, float *restrict xyb, size_t n) {
	const float m00 = 0.30f, m01 = 0.622f, m02 = 0.078f;
	const float m10 = 0.23f, m11 = 0.692f, m12 = 0.078f;
	const float m20 = 0.24342268924547819f, m21 = 0.20476744424496821f, m22 = 1.0f - 0.24342268924547819f - 0.20476744424496821f;
	const float bias = 0.0037930732552754493f;
	const float cbias = vt_s2_cbrt(bias);
	const float *restrict r = lin, *restrict g = lin + n, *restrict b = lin + 2 * n;
	float *restrict X = xyb, *restrict Y = xyb + n, *restrict B = xyb + 2 * n;
	for (size_t i = 0; i < n; i++) {
		// Mixed values below zero (out of gamut) are clamped; a tiny floor
		// keeps the Newton steps finite where the cube root is 0.
		float l = m00 * r[i] + m01 * g[i] + m02 * b[i] + bias;
		float m = m10 * r[i] + m11 * g[i] + m12 * b[i] + bias;
		float s = m20 * r[i] + m21 * g[i] + m22 * b[i] + bias;
		l = vt_s2_cbrt(l > 1e-30f ? l : 1e-30f) - cbias;
		m = vt_s2_cbrt(m > 1e-30f ? m : 1e-30f) - cbias;
		s = vt_s2_cbrt(s > 1e-30f ? s : 1e-30f) - cbias;
		float x = 0.5f * (l - m), y = 0.5f * (l + m);
		X[i] = x * 14.0f + 0.42f;
		Y[i] = y + 0.01f;
		B[i] = (s - y) + 0.55f;
	}
}

VT_CLONES
void vt_s2_mul(const float *restrict a, const float *restrict b, float *restrict o, size_t n) {
	for (size_t i = 0; i < n; i++)
		o[i] = a[i] * b[i];
}

// The map sums run a row at a time in float lanes (vectorised) and add
// each row's sums in double.

// vt_s2_ssim_row adds one row's 1 - SSIM' and its fourth power to acc.
VT_CLONES
void vt_s2_ssim_row(const float *restrict mu1, const float *restrict mu2, const float *restrict s11, const float *restrict s22,
		    const float *restrict s12, int w, double *acc) {
	const float c2 = 0.0009f;
	float sum = 0, sum4 = 0;
	for (int i = 0; i < w; i++) {
		float m1 = mu1[i], m2 = mu2[i];
		float num_m = 1.0f - (m1 - m2) * (m1 - m2);
		float num_s = 2 * (s12[i] - m1 * m2) + c2;
		float den_s = (s11[i] - m1 * m1) + (s22[i] - m2 * m2) + c2;
		float d = 1.0f - num_m * num_s / den_s;
		d = d > 0 ? d : 0;
		float d2 = d * d;
		sum += d;
		sum4 += d2 * d2;
	}
	acc[0] += sum;
	acc[1] += sum4;
}

// vt_s2_ssim_sums sets out[0], out[1] to the 1-norm and 4-norm of the
// 1 - SSIM' map.
static void vt_s2_ssim_sums(const float *mu1, const float *mu2, const float *s11, const float *s22, const float *s12, int w, int h,
			    double *out) {
	double acc[2] = {0, 0};
	for (int y = 0; y < h; y++) {
		size_t o = (size_t) y * w;
		vt_s2_ssim_row(mu1 + o, mu2 + o, s11 + o, s22 + o, s12 + o, w, acc);
	}
	double n = (double) w * h;
	out[0] = acc[0] / n;
	out[1] = sqrt(sqrt(acc[1] / n));
}

// vt_s2_edge_row adds one row's artifact and detail-lost sums.
VT_CLONES
void vt_s2_edge_row(const float *restrict i1, const float *restrict m1, const float *restrict i2, const float *restrict m2, int w,
		    double *acc) {
	float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	for (int i = 0; i < w; i++) {
		float d = (1.0f + fabsf(i2[i] - m2[i])) / (1.0f + fabsf(i1[i] - m1[i])) - 1.0f;
		float art = d > 0 ? d : 0, lost = d < 0 ? -d : 0;
		float a2 = art * art, l2 = lost * lost;
		s0 += art;
		s1 += a2 * a2;
		s2 += lost;
		s3 += l2 * l2;
	}
	acc[0] += s0;
	acc[1] += s1;
	acc[2] += s2;
	acc[3] += s3;
}

// vt_s2_edge_sums sets out[0..3] to the artifact map's 1-norm and 4-norm
// and the detail-lost map's.
static void vt_s2_edge_sums(const float *i1, const float *m1, const float *i2, const float *m2, int w, int h, double *out) {
	double acc[4] = {0, 0, 0, 0};
	for (int y = 0; y < h; y++) {
		size_t o = (size_t) y * w;
		vt_s2_edge_row(i1 + o, m1 + o, i2 + o, m2 + o, w, acc);
	}
	double n = (double) w * h;
	out[0] = acc[0] / n;
	out[1] = sqrt(sqrt(acc[1] / n));
	out[2] = acc[2] / n;
	out[3] = sqrt(sqrt(acc[3] / n));
}

static const double vt_s2_weights[108] = {
    0.0, 0.0007376606707406586, 0.0, 0.0, 0.0007793481682867309, 0.0, 0.0, 0.0004371155730107379, 0.0,
    1.1041726426657346, 0.00066284834129271, 0.00015231632783718752, 0.0, 0.0016406437456599754, 0.0,
    1.8422455520539298, 11.441172603757666, 0.0, 0.0007989109436015163, 0.000176816438078653, 0.0,
    1.8787594979546387, 10.94906990605142, 0.0, 0.0007289346991508072, 0.9677937080626833, 0.0,
    0.00014003424285435884, 0.9981766977854967, 0.00031949755934435053, 0.0004550992113792063, 0.0, 0.0,
    0.0013648766163243398, 0.0, 0.0, 0.0, 0.0, 0.0, 7.466890328078848, 0.0, 17.445833984131262,
    0.0006235601634041466, 0.0, 0.0, 6.683678146179332, 0.00037724407979611296, 1.027889937768264,
    225.20515300849274, 0.0, 0.0, 19.213238186143016, 0.0011401524586618361, 0.001237755635509985,
    176.39317598450694, 0.0, 0.0, 24.43300999870476, 0.28520802612117757, 0.0004485436923833408, 0.0, 0.0,
    0.0, 34.77906344483772, 44.835625328877896, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0008680556573291698, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0005313191874358747, 0.0, 0.00016533814161379112,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0004179171803251336, 0.0017290828234722833, 0.0, 0.0020827005846636437,
    0.0, 0.0, 8.826982764996862, 23.19243343998926, 0.0, 95.1080498811086, 0.9863978034400682,
    0.9834382792465353, 0.0012286405048278493, 171.2667255897307, 0.9807858872435379, 0.0, 0.0, 0.0,
    0.0005130064588990679, 0.0, 0.00010854057858411537,
};

// vt_s2_ref is a reference image prepared once for scoring many distorted
// images against it: per scale, its XYB planes, their blur (mu1) and the
// blur of their squares (sigma11), which are the reference's share of the
// work (two of the five blurs per channel and scale).
struct vt_s2_ref {
	int w, h, scales;
	float *buf, *scratch;
	float *xyb[VT_SCALES], *mu[VT_SCALES], *s11[VT_SCALES];
};

vt_s2_ref *vt_s2_ref_new(const uint8_t *ref, int w, int h) {
	if (w < 8 || h < 8)
		return NULL;
	vt_s2_ref *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->w = w, r->h = h;
	size_t n = (size_t) w * h, total = 0;
	for (int sw = w, sh = h, scale = 0; scale < VT_SCALES && sw >= 8 && sh >= 8; scale++) {
		total += 9 * (size_t) sw * sh;
		sw = (sw + 1) / 2, sh = (sh + 1) / 2;
	}
	// The kept planes, then scratch: lin (3 planes), its downsample (3),
	// mul and tmp (one each) and the vertical blur's 6 rows.
	r->buf = malloc(sizeof(float) * (total + 8 * n + 6 * (size_t) w));
	// vt_s2_ref_score's planes, kept so that each score reuses them.
	r->scratch = malloc(sizeof(float) * (11 * n + 6 * (size_t) w));
	if (!r->buf || !r->scratch) {
		free(r->buf);
		free(r->scratch);
		free(r);
		return NULL;
	}
	float *lin = r->buf + total, *half = lin + 3 * n, *mul = half + 3 * n, *tmp = mul + n, *ring = tmp + n;
	vt_s2_rgauss rg;
	vt_s2_rgauss_init(&rg, 1.5);
	vt_s2_srgb_to_linear(ref, lin, w, h);
	float *next = r->buf;
	for (int scale = 0; scale < VT_SCALES; scale++) {
		if (w < 8 || h < 8)
			break;
		if (scale) {
			int ow = (w + 1) / 2, oh = (h + 1) / 2;
			vt_s2_downsample(lin, half, w, h, ow, oh);
			w = ow, h = oh, n = (size_t) w * h;
			memcpy(lin, half, sizeof(float) * 3 * n);
		}
		r->xyb[scale] = next, r->mu[scale] = next + 3 * n, r->s11[scale] = next + 6 * n;
		next += 9 * n;
		vt_s2_to_xyb(lin, r->xyb[scale], n);
		for (int c = 0; c < 3; c++) {
			const float *p1 = r->xyb[scale] + c * n;
			vt_s2_mul(p1, p1, mul, n);
			vt_s2_blur(&rg, mul, r->s11[scale] + c * n, tmp, ring, w, h);
			vt_s2_blur(&rg, p1, r->mu[scale] + c * n, tmp, ring, w, h);
		}
		r->scales++;
	}
	return r;
}

void vt_s2_ref_free(vt_s2_ref *r) {
	if (r) {
		free(r->buf);
		free(r->scratch);
		free(r);
	}
}

int vt_s2_ref_score(const vt_s2_ref *r, const uint8_t *dist, double *score) {
	int w = r->w, h = r->h;
	size_t n = (size_t) w * h;
	// lin2, xyb2: 3 planes each; mu2, s22, s12, mul, tmp: one plane each;
	// the vertical blur's 6 rows.
	float *lin2 = r->scratch, *xyb2 = lin2 + 3 * n;
	float *mu2 = xyb2 + 3 * n, *s22 = mu2 + n, *s12 = s22 + n, *mul = s12 + n, *tmp = mul + n, *ring = tmp + n;
	vt_s2_rgauss rg;
	vt_s2_rgauss_init(&rg, 1.5);
	vt_s2_srgb_to_linear(dist, lin2, w, h);

	double ssim[VT_SCALES][6], edge[VT_SCALES][12];
	int scales = r->scales;
	for (int scale = 0; scale < scales; scale++) {
		if (scale) {
			// Downsample through xyb2, then back into lin2.
			int ow = (w + 1) / 2, oh = (h + 1) / 2;
			vt_s2_downsample(lin2, xyb2, w, h, ow, oh);
			w = ow, h = oh, n = (size_t) w * h;
			memcpy(lin2, xyb2, sizeof(float) * 3 * n);
		}
		vt_s2_to_xyb(lin2, xyb2, n);
		for (int c = 0; c < 3; c++) {
			const float *p1 = r->xyb[scale] + c * n, *p2 = xyb2 + c * n;
			const float *mu1 = r->mu[scale] + c * n, *s11 = r->s11[scale] + c * n;
			vt_s2_mul(p2, p2, mul, n);
			vt_s2_blur(&rg, mul, s22, tmp, ring, w, h);
			vt_s2_mul(p1, p2, mul, n);
			vt_s2_blur(&rg, mul, s12, tmp, ring, w, h);
			vt_s2_blur(&rg, p2, mu2, tmp, ring, w, h);
			vt_s2_ssim_sums(mu1, mu2, s11, s22, s12, w, h, &ssim[scale][2 * c]);
			vt_s2_edge_sums(p1, mu1, p2, mu2, w, h, &edge[scale][4 * c]);
		}
	}

	double s = 0;
	int i = 0;
	for (int c = 0; c < 3; c++)
		for (int scale = 0; scale < scales; scale++)
			for (int k = 0; k < 2; k++) {
				s += vt_s2_weights[i++] * fabs(ssim[scale][2 * c + k]);
				s += vt_s2_weights[i++] * fabs(edge[scale][4 * c + k]);
				s += vt_s2_weights[i++] * fabs(edge[scale][4 * c + k + 2]);
			}
	s *= 0.9562382616834844;
	s = 2.326765642916932 * s - 0.020884521182843837 * s * s + 6.248496625763138e-05 * s * s * s;
	*score = s > 0 ? 100.0 - 10.0 * pow(s, 0.6276336467831387) : 100.0;
	return 0;
}

int vt_ssimulacra2(const uint8_t *ref, const uint8_t *dist, int w, int h, double *score) {
	vt_s2_ref *r = vt_s2_ref_new(ref, w, h);
	if (!r)
		return -1;
	int rc = vt_s2_ref_score(r, dist, score);
	vt_s2_ref_free(r);
	return rc;
}
