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

#endif
