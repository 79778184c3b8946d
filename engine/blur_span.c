// The row spans of the motion and adaptive blurs (blur_span.h): a mask's
// taps summed over a row in integer SIMD lanes.

#include <math.h>
#include <string.h>

#include "blur_span.h"

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
void vt_motion_span(const VipsPel *const *src, const uint16_t *w, int n, size_t len, VipsPel *out) {
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
void vt_sym_span(const VipsPel *const *src, const uint16_t *w, int n, size_t len, VipsPel *out) {
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
void vt_span_wide(const VipsPel *const *src, const uint32_t *w, int n, size_t len, VipsPel *out) {
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
void vt_weights(const double *m, int n, uint32_t total, uint32_t *q) {
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
