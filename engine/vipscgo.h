// The libvips helpers of vipscgo.c, called from vipscgo.go. Each returns 0
// on success and -1 with libvips' error buffer set on failure; an output
// image belongs to the caller.

#ifndef VITRINE_VIPSCGO_H
#define VITRINE_VIPSCGO_H

#include <stddef.h>
#include <stdint.h>
#include <vips/vips.h>

// vt_modulate_hsl: ImageMagick's ModulateHSL of a 3-band 0..255 image
// (lightness x b, saturation x s, hue + dh sextants), as a lazy graph; the
// output is float.
int vt_modulate_hsl(VipsImage *in, VipsImage **out, double b, double s, double dh);

// vt_copy_memory renders in into memory.
int vt_copy_memory(VipsImage *in, VipsImage **out);

// vt_conv convolves in with a w x h row-major mask divided by scale
// (precision a VipsPrecision, layers for the approximate one).
int vt_conv(VipsImage *in, VipsImage **out, double *mask, int w, int h, double scale, int precision, int layers);

// vt_write_into renders in, whose pixels take exactly size bytes, into dst.
int vt_write_into(VipsImage *in, void *dst, size_t size);

// vt_in_place makes *out a w x h image read in place from data; handle
// goes back to Go (vitrinePixelBufferClosed) when libvips closes it.
int vt_in_place(void *data, size_t size, int w, int h, int bands, VipsBandFormat fmt, uintptr_t handle, VipsImage **out);

// vt_image_bytes is the size of in's pixels in bytes.
size_t vt_image_bytes(VipsImage *im);

// vt_copy_meta gives out in's header fields and metadata (EXIF, ICC and
// the rest), as an operation on in would.
void vt_copy_meta(VipsImage *in, VipsImage *out);

#endif
