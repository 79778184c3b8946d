// SSIMULACRA 2 (ssimulacra2.c): a perceptual distance between two sRGB
// images of the same size, as a score from 100 (identical) down.
#ifndef VT_SSIMULACRA2_H
#define VT_SSIMULACRA2_H

#include <stddef.h>
#include <stdint.h>

// vt_ssimulacra2 scores dist against ref, both w x h 8-bit sRGB, 3 bytes
// a pixel, rows packed. It returns 0 and sets *score, or -1 when memory
// could not be had or the image is smaller than 8x8.
int vt_ssimulacra2(const uint8_t *ref, const uint8_t *dist, int w, int h, double *score);

// vt_s2_ref is a reference prepared for scoring several images against it
// (the reference's half of the work done once). vt_s2_ref_new returns NULL
// when memory could not be had or the image is smaller than 8x8;
// vt_s2_ref_score scores dist (the reference's size, same layout) as
// vt_ssimulacra2 would, returning 0. A prepared reference holds the
// scratch planes of its scores: one thread scores against it at a time.
typedef struct vt_s2_ref vt_s2_ref;
vt_s2_ref *vt_s2_ref_new(const uint8_t *ref, int w, int h);
int vt_s2_ref_score(const vt_s2_ref *r, const uint8_t *dist, double *score);
void vt_s2_ref_free(vt_s2_ref *r);

#endif
