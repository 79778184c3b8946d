// The engine's libvips helpers for vipscgo.go (declared in vipscgo.h):
// operations govips does not export, pixel copies into and out of the
// pooled buffers (pixelpool.go), and the header copy of the blur kernels.

#include <stdint.h>
#include <string.h>

#include "vipscgo.h"

// vt_finish hands the last image of a graph built in scope to the caller and
// releases every intermediate (each operation keeps its own inputs alive).
static int vt_finish(VipsObject *scope, VipsImage *last, VipsImage **out) {
	if (last) {
		g_object_ref(last);
		*out = last;
	}
	g_object_unref(scope);
	return last ? 0 : -1;
}

// vt_modulate_hsl is ImageMagick's ModulateHSL on a 3-band image with values
// 0..255: L x b, S x s, hue + dh sextants (0 <= dh < 6). The output is float,
// 0..255 before clipping. Every step is a libvips operation, so the whole
// graph stays lazy and runs tile by tile.
int vt_modulate_hsl(VipsImage *in, VipsImage **out, double b, double s, double dh) {
	VipsObject *scope = VIPS_OBJECT(vips_image_new());
	VipsImage **t = (VipsImage **) vips_object_local_array(scope, 64);
	VipsImage *rgb[3], *ch[3];
	static const double offset[3] = {0, 8, 4};
	int i;

	if (vips_linear1(in, &t[0], 1.0 / 255, 0, NULL) ||
		vips_extract_band(t[0], &t[1], 0, NULL) ||
		vips_extract_band(t[0], &t[2], 1, NULL) ||
		vips_extract_band(t[0], &t[3], 2, NULL))
		return vt_finish(scope, NULL, out);
	rgb[0] = t[1]; rgb[1] = t[2]; rgb[2] = t[3];
	if (vips_bandrank(rgb, &t[4], 3, "index", 2, NULL) ||        // max
		vips_bandrank(rgb, &t[5], 3, "index", 0, NULL) ||        // min
		vips_subtract(t[4], t[5], &t[6], NULL) ||                 // C = max - min
		vips_add(t[4], t[5], &t[7], NULL) ||                      // 2L
		// The hue in sextants: (G-B)/C, (B-R)/C + 2 or (R-G)/C + 4
		// depending on which band is the largest (libvips divides
		// by zero to zero: grey is hue 0).
		vips_subtract(t[2], t[3], &t[8], NULL) ||
		vips_subtract(t[3], t[1], &t[9], NULL) ||
		vips_subtract(t[1], t[2], &t[10], NULL) ||
		vips_divide(t[8], t[6], &t[11], NULL) ||
		vips_divide(t[9], t[6], &t[12], NULL) ||
		vips_divide(t[10], t[6], &t[13], NULL) ||
		vips_linear1(t[12], &t[14], 1, 2, NULL) ||
		vips_linear1(t[13], &t[15], 1, 4, NULL) ||
		vips_relational(t[4], t[1], &t[16], VIPS_OPERATION_RELATIONAL_EQUAL, NULL) ||
		vips_relational(t[4], t[2], &t[17], VIPS_OPERATION_RELATIONAL_EQUAL, NULL) ||
		vips_ifthenelse(t[17], t[14], t[15], &t[18], NULL) ||
		vips_ifthenelse(t[16], t[11], t[18], &t[19], NULL) ||
		// 2H' = 2(H + dh + 6), positive for the remainders below.
		vips_linear1(t[19], &t[20], 2, 2 * (dh + 6), NULL) ||
		// S = C / (1 - |2L - 1|)
		vips_linear1(t[7], &t[21], 1, -1, NULL) ||
		vips_abs(t[21], &t[22], NULL) ||
		vips_linear1(t[22], &t[23], -1, 1, NULL) ||
		vips_divide(t[6], t[23], &t[24], NULL) ||
		// a = (1 - |2L' - 1|) S' / 2 with L' = L b, S' = S s
		vips_linear1(t[7], &t[25], b, -1, NULL) ||
		vips_abs(t[25], &t[26], NULL) ||
		vips_linear1(t[26], &t[27], -s / 2, s / 2, NULL) ||
		vips_multiply(t[27], t[24], &t[28], NULL) ||
		// L' = b (2L) / 2
		vips_linear1(t[7], &t[29], b / 2, 0, NULL))
		return vt_finish(scope, NULL, out);
	// Each band: L' - a clamp(3 - |k - 6|, -1, 1), k = (2H' + n) mod 12,
	// with clamp(x, -1, 1) = (|x + 1| - |x - 1|) / 2.
	for (i = 0; i < 3; i++) {
		VipsImage **u = t + 30 + 10 * i;
		if (vips_linear1(t[20], &u[0], 1, offset[i], NULL) ||
			vips_remainder_const1(u[0], &u[1], 12, NULL) ||
			vips_linear1(u[1], &u[2], 1, -6, NULL) ||
			vips_abs(u[2], &u[3], NULL) ||                        // |k - 6|
			vips_linear1(u[3], &u[4], -1, 4, NULL) ||             // x + 1
			vips_abs(u[4], &u[5], NULL) ||
			vips_linear1(u[3], &u[6], -1, 2, NULL) ||             // x - 1
			vips_abs(u[6], &u[7], NULL) ||
			vips_subtract(u[5], u[7], &u[8], NULL) ||             // 2 clamp
			vips_multiply(u[8], t[28], &u[9], NULL))
			return vt_finish(scope, NULL, out);
		// L' - a clamp = t29 - u9 / 2
		if (vips_linear1(u[9], &t[60 + i], -0.5, 0, NULL))
			return vt_finish(scope, NULL, out);
	}
	{
		VipsImage **v = (VipsImage **) vips_object_local_array(scope, 6);
		for (i = 0; i < 3; i++) {
			if (vips_add(t[29], t[60 + i], &v[i], NULL))
				return vt_finish(scope, NULL, out);
			ch[i] = v[i];
		}
		if (vips_bandjoin(ch, &v[3], 3, NULL) ||
			vips_linear1(v[3], &v[4], 255, 0, NULL))
			return vt_finish(scope, NULL, out);
		return vt_finish(scope, v[4], out);
	}
}

// vt_copy_memory renders in into memory.
int vt_copy_memory(VipsImage *in, VipsImage **out) {
	*out = vips_image_copy_memory(in);
	return *out ? 0 : -1;
}

// vt_conv convolves in with a w x h matrix (row-major) divided by scale;
// precision is a VipsPrecision, layers the box count of the approximate one.
int vt_conv(VipsImage *in, VipsImage **out, double *mask, int w, int h, double scale, int precision, int layers) {
	VipsImage *m = vips_image_new_matrix_from_array(w, h, mask, w * h);
	int r;
	if (!m)
		return -1;
	vips_image_set_double(m, "scale", scale);
	vips_image_set_double(m, "offset", 0);
	r = vips_conv(in, out, m, "precision", precision, "layers", layers, NULL);
	g_object_unref(m);
	return r;
}

// vitrinePixelBufferClosed is Go's (pixelpool.go): it returns a pooled
// buffer once libvips has closed the image read in place from it.
extern void vitrinePixelBufferClosed(uintptr_t handle);

// vt_write_into computes in strip by strip on the calling thread, straight
// into dst. The engine runs libvips at concurrency 1, so a worker thread
// and a write-behind thread (vips_sink_disc) add only their hand-offs: two
// futex round trips per strip, more than the copying itself at 1 MP.
int vt_write_into(VipsImage *in, void *dst, size_t size) {
	VipsImage *mem;
	VipsRegion *from, *to;
	VipsRect r;
	int y, ret = 0;

	if (VIPS_IMAGE_SIZEOF_IMAGE(in) != size) {
		vips_error("vitrine", "%zu bytes for a %zu-byte image", size, (size_t) VIPS_IMAGE_SIZEOF_IMAGE(in));
		return -1;
	}
	if (!(mem = vips_image_new_from_memory(dst, size, in->Xsize, in->Ysize, in->Bands, in->BandFmt)))
		return -1;
	from = vips_region_new(in);
	to = vips_region_new(mem);
	for (y = 0; y < in->Ysize; y += 64) {
		r.left = 0;
		r.top = y;
		r.width = in->Xsize;
		r.height = VIPS_MIN(64, in->Ysize - y);
		if (vips_region_image(to, &r) || vips_region_prepare_to(from, to, &r, 0, y)) {
			ret = -1;
			break;
		}
	}
	g_object_unref(to);
	g_object_unref(from);
	g_object_unref(mem);
	return ret;
}

static void vt_buffer_closed(VipsImage *im, void *handle) {
	vitrinePixelBufferClosed((uintptr_t) handle);
}

// vt_in_place makes *out an image read in place from data, whose handle
// goes back to Go when libvips closes the image.
int vt_in_place(void *data, size_t size, int w, int h, int bands, VipsBandFormat fmt, uintptr_t handle, VipsImage **out) {
	VipsImage *im = vips_image_new_from_memory(data, size, w, h, bands, fmt);
	if (!im)
		return -1;
	g_signal_connect(im, "postclose", G_CALLBACK(vt_buffer_closed), (void *) handle);
	*out = im;
	return 0;
}

size_t vt_image_bytes(VipsImage *im) {
	return VIPS_IMAGE_SIZEOF_IMAGE(im);
}

// vt_copy_meta gives out in's header fields and metadata (EXIF, ICC and
// the rest), as an operation on in would.
void vt_copy_meta(VipsImage *in, VipsImage *out) {
	static const char *builtin[] = {"width", "height", "bands", "format", "coding", "interpretation",
		"xres", "yres", "xoffset", "yoffset", "filename", "mode", "scale", "offset", NULL};
	gchar **fields = vips_image_get_fields(in);
	int i, j;

	out->Type = in->Type;
	out->Xres = in->Xres;
	out->Yres = in->Yres;
	out->Xoffset = in->Xoffset;
	out->Yoffset = in->Yoffset;
	for (i = 0; fields[i]; i++) {
		GValue v = {0};
		for (j = 0; builtin[j] && strcmp(builtin[j], fields[i]) != 0; j++)
			;
		if (builtin[j] || vips_image_get(in, fields[i], &v))
			continue;
		vips_image_set(out, fields[i], &v);
		g_value_unset(&v);
	}
	g_strfreev(fields);
}
