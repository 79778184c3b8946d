// The row spans shared by the motion blur (blur_motion.c) and the adaptive
// blur (blur_adaptive.c), defined in blur_span.c: each computes len
// samples of an output row from the source rows src[i] of n taps (pointers
// already offset to the taps' columns), in 8 bits.

#ifndef VITRINE_BLUR_SPAN_H
#define VITRINE_BLUR_SPAN_H

#include "blur.h"

// Row loops are compiled for AVX-512 and AVX2 as well as the baseline, the
// copy chosen at load time by the CPU (GCC's function multiversioning,
// x86-64 only).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VT_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define VT_CLONES
#endif

// vt_motion_span: weights w in 256ths, all taps inside the image.
void vt_motion_span(const VipsPel *const *src, const uint16_t *w, int n, size_t len, VipsPel *out);

// vt_sym_span: vt_motion_span for a symmetric mask of odd n taps.
void vt_sym_span(const VipsPel *const *src, const uint16_t *w, int n, size_t len, VipsPel *out);

// vt_span_wide: vt_motion_span with the weights in 65536ths.
void vt_span_wide(const VipsPel *const *src, const uint32_t *w, int n, size_t len, VipsPel *out);

// vt_weights turns a mask of n taps into integer weights adding up to
// total (256 or 65536).
void vt_weights(const double *m, int n, uint32_t total, uint32_t *q);

#endif
