package engine

/*
#cgo pkg-config: vips
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <vips/vips.h>

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
static int vt_modulate_hsl(VipsImage *in, VipsImage **out, double b, double s, double dh) {
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
static int vt_copy_memory(VipsImage *in, VipsImage **out) {
	*out = vips_image_copy_memory(in);
	return *out ? 0 : -1;
}

// vt_conv convolves in with a w x h matrix (row-major) divided by scale;
// precision is a VipsPrecision, layers the box count of the approximate one.
static int vt_conv(VipsImage *in, VipsImage **out, double *mask, int w, int h, double scale, int precision, int layers) {
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

// vt_polar_index is the inverse polar map of a w x h image for
// vt_rotational_blur: for each pixel (x, y), (angle of (x - cx, y - cy) in
// columns of na per turn, in [0, na), and radius), computed at a
// resolution of one in step pixels (of which x0, y0 is the first). *out
// belongs to scope.
static int vt_polar_index(VipsObject *scope, VipsImage **out, int w, int h, int step, int x0, int y0, double cx, double cy, int na) {
	VipsImage **t = (VipsImage **) vips_object_local_array(scope, 11);
	VipsImage *pair[2];
	if (vips_xyz(&t[0], w, h, NULL) ||
		vips_extract_band(t[0], &t[1], 0, NULL) ||
		vips_extract_band(t[0], &t[2], 1, NULL) ||
		vips_linear1(t[1], &t[3], step, x0 - cx, NULL) ||
		vips_linear1(t[2], &t[4], step, y0 - cy, NULL) ||
		vips_complexform(t[3], t[4], &t[5], NULL) ||
		vips_polar(t[5], &t[6], NULL) ||                     // (radius, degrees in [0, 360))
		vips_real(t[6], &t[7], NULL) ||
		vips_imag(t[6], &t[8], NULL) ||
		vips_linear1(t[8], &t[9], na / 360.0, 0, NULL))
		return -1;
	pair[0] = t[9];
	pair[1] = t[7];
	if (vips_bandjoin(pair, &t[10], 2, NULL))
		return -1;
	*out = t[10];
	return 0;
}

// vt_rotational_blur averages in over rotations about (cx, cy) spanning
// theta degrees: the image is resampled to polar coordinates with na angles
// and nr radii (positions outside the image take the nearest edge pixel, so
// corners stay bright), blurred with a box of k angles (wrapping round), and
// resampled back.
static int vt_rotational_blur(VipsImage *in, VipsImage **out, double cx, double cy, int na, int nr, int k) {
	VipsObject *scope = VIPS_OBJECT(vips_image_new());
	VipsImage **t = (VipsImage **) vips_object_local_array(scope, 64);
	int w = in->Xsize, h = in->Ysize, pad = k / 2 + 1, i, r;
	int lw = w / 2 + 2, lh = h / 2 + 2, sy0 = MAX(0, (int) cy - 3), sh = MIN(h - sy0, 7);
	double *box;
	VipsImage *low, *seam; // owned by scope
	VipsInterpolate *bilinear;
	VipsArrayInt *oarea;

	// Forward map: polar (a, r) -> (cx + r cos, cy + r sin). The cosines
	// and sines depend on the column only and the radius on the row only:
	// 1-D profiles, replicated, then multiplied.
	if (vips_xyz(&t[1], na, 1, NULL) ||
		vips_extract_band(t[1], &t[2], 0, NULL) ||
		vips_linear1(t[2], &t[4], 360.0 / na, 0, NULL) ||
		vips_math(t[4], &t[5], VIPS_OPERATION_MATH_COS, NULL) ||
		vips_math(t[4], &t[6], VIPS_OPERATION_MATH_SIN, NULL) ||
		!(t[32] = vips_image_copy_memory(t[5])) ||
		!(t[33] = vips_image_copy_memory(t[6])) ||
		vips_replicate(t[32], &t[34], 1, nr, NULL) ||
		vips_replicate(t[33], &t[35], 1, nr, NULL) ||
		vips_xyz(&t[36], 1, nr, NULL) ||
		vips_extract_band(t[36], &t[37], 1, NULL) ||
		vips_cast(t[37], &t[3], VIPS_FORMAT_FLOAT, NULL) ||
		vips_replicate(t[3], &t[38], na, 1, NULL) ||
		vips_multiply(t[38], t[34], &t[7], NULL) ||
		vips_multiply(t[38], t[35], &t[8], NULL) ||
		vips_linear1(t[7], &t[9], 1, cx, NULL) ||
		vips_linear1(t[8], &t[10], 1, cy, NULL) ||
		// Positions outside the image take the nearest edge pixel
		// (mapim's extend only covers the interpolation window):
		// clamp(v, 0, m) = (|v| - |v - m| + m) / 2.
		vips_abs(t[9], &t[40], NULL) ||
		vips_linear1(t[9], &t[41], 1, -(w - 1), NULL) ||
		vips_abs(t[41], &t[42], NULL) ||
		vips_subtract(t[40], t[42], &t[43], NULL) ||
		vips_linear1(t[43], &t[44], 0.5, (w - 1) / 2.0, NULL) ||
		vips_abs(t[10], &t[45], NULL) ||
		vips_linear1(t[10], &t[46], 1, -(h - 1), NULL) ||
		vips_abs(t[46], &t[47], NULL) ||
		vips_subtract(t[45], t[47], &t[48], NULL) ||
		vips_linear1(t[48], &t[49], 0.5, (h - 1) / 2.0, NULL) ||
		vips_bandjoin2(t[44], t[49], &t[11], NULL) ||
		// mapim asks its input for the bounding box of each output
		// tile's positions, which for a polar tile is a large part of
		// the image: the input is computed once, into memory.
		!(t[29] = vips_image_copy_memory(in)) ||
		vips_mapim(t[29], &t[12], t[11], NULL) ||
		// The box reads k columns around each output: from memory, not
		// by recomputing the mapping k times over.
		!(t[31] = vips_image_copy_memory(t[12])) ||
		// The box along the angles wraps round: extend by repeating.
		vips_embed(t[31], &t[13], pad, 0, na + 2 * pad, nr, "extend", VIPS_EXTEND_REPEAT, NULL))
		return vt_finish(scope, NULL, out);
	box = g_new(double, k);
	for (i = 0; i < k; i++)
		box[i] = 1;
	t[14] = vips_image_new_matrix_from_array(k, 1, box, k);
	g_free(box);
	if (!t[14])
		return vt_finish(scope, NULL, out);
	vips_image_set_double(t[14], "scale", k);
	if (vips_conv(t[13], &t[15], t[14], "precision", VIPS_PRECISION_APPROXIMATE, "layers", 1, NULL) ||
		// Columns 0 .. na + 1 (na is angle 0 again, for interpolating
		// between the last angle and the first).
		vips_extract_area(t[15], &t[16], pad, 0, na + 2, nr, NULL) ||
		!(t[30] = vips_image_copy_memory(t[16])))
		return vt_finish(scope, NULL, out);
	// Inverse map. atan2 and hypot per pixel cost more than everything
	// else, so they are computed at half resolution and interpolated. The
	// angle jumps from na to 0 across the ray right of the centre, where
	// interpolating is wrong: the rows around that ray are computed at full
	// resolution and inserted.
	if (vt_polar_index(scope, &low, lw, lh, 2, 0, 0, cx, cy, na) ||
		!(t[18] = vips_image_copy_memory(low)))
		return vt_finish(scope, NULL, out);
	bilinear = vips_interpolate_new("bilinear");
	oarea = vips_array_int_newv(4, 0, 0, w, h);
	r = vips_affine(t[18], &t[19], 2, 0, 0, 2, "interpolate", bilinear, "oarea", oarea, NULL);
	vips_area_unref(VIPS_AREA(oarea));
	g_object_unref(bilinear);
	if (r ||
		vt_polar_index(scope, &seam, w, sh, 1, 0, sy0, cx, cy, na) ||
		vips_insert(t[19], seam, &t[21], 0, sy0, NULL) ||
		vips_mapim(t[30], &t[28], t[21], NULL))
		return vt_finish(scope, NULL, out);
	return vt_finish(scope, t[28], out);
}

// vt_motion_rows computes one output row: for each 16 samples, the sum of
// w[i] * src[i][k] over the taps in a register of sixteen 16-bit lanes (the
// weights add up to 256, so 255 * 256 fits), rounded. Written with GCC
// vector types, so it is SIMD whatever the optimisation level, and compiled
// for AVX2 too where the CPU has it: the auto-vectorised loop over a row
// buffer ran at scalar speed.
typedef uint16_t vt_u16x16 __attribute__((vector_size(32)));
typedef uint8_t vt_u8x16 __attribute__((vector_size(16)));

__attribute__((target_clones("avx2", "default")))
static void vt_motion_rows(const VipsPel **src, const uint16_t *w, int n, size_t len, VipsPel *out) {
	size_t k = 0;
	int i;
	for (; k + 16 <= len; k += 16) {
		vt_u16x16 s = {128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128};
		vt_u8x16 p, o;
		for (i = 0; i < n; i++) {
			memcpy(&p, src[i] + k, 16);
			s += __builtin_convertvector(p, vt_u16x16) * w[i];
		}
		o = __builtin_convertvector(s >> 8, vt_u8x16);
		memcpy(out + k, &o, 16);
	}
	for (; k < len; k++) {
		uint16_t s = 128;
		for (i = 0; i < n; i++)
			s += (uint16_t) (w[i] * src[i][k]);
		out[k] = (VipsPel) (s >> 8);
	}
}

static void vt_g_free(VipsImage *im, void *buf) {
	g_free(buf);
}

// vt_copy_meta gives out in's header fields and metadata (EXIF, ICC and the
// rest), as an operation on in would.
static void vt_copy_meta(VipsImage *in, VipsImage *out) {
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

// vt_motion_u8 is the motion blur of an 8-bit image: out(x, y) = sum of
// w[i] * in(x + dx[i], y + dy[i]) / 256, edges extended by copying (as
// vips_conv does). The taps are a line, so a mask around them would be
// mostly zeros; here each tap is one pass over a source row, straight into
// the output's memory.
static int vt_motion_u8(VipsImage *in, VipsImage **out, const int *dx, const int *dy, const uint16_t *w, int n) {
	VipsObject *scope = VIPS_OBJECT(vips_image_new());
	VipsImage **t = (VipsImage **) vips_object_local_array(scope, 3);
	int minx = 0, maxx = 0, miny = 0, maxy = 0, i, y;
	size_t len;
	const VipsPel **src;
	VipsPel *pix;

	if (in->BandFmt != VIPS_FORMAT_UCHAR || n < 1) {
		vips_error("vitrine", "motion blur: 8-bit image and at least one tap needed");
		return vt_finish(scope, NULL, out);
	}
	for (i = 0; i < n; i++) {
		minx = VIPS_MIN(minx, dx[i]);
		maxx = VIPS_MAX(maxx, dx[i]);
		miny = VIPS_MIN(miny, dy[i]);
		maxy = VIPS_MAX(maxy, dy[i]);
	}
	if (vips_embed(in, &t[0], -minx, -miny, in->Xsize + maxx - minx, in->Ysize + maxy - miny,
			"extend", VIPS_EXTEND_COPY, NULL) ||
		!(t[1] = vips_image_copy_memory(t[0])))
		return vt_finish(scope, NULL, out);
	len = (size_t) in->Xsize * in->Bands;
	if (!(pix = g_try_malloc(len * in->Ysize))) {
		vips_error("vitrine", "motion blur: out of memory");
		return vt_finish(scope, NULL, out);
	}
	src = g_new(const VipsPel *, n);
	for (y = 0; y < in->Ysize; y++) {
		for (i = 0; i < n; i++)
			src[i] = VIPS_IMAGE_ADDR(t[1], dx[i] - minx, y + dy[i] - miny);
		vt_motion_rows(src, w, n, len, pix + (size_t) y * len);
	}
	g_free(src);
	if (!(t[2] = vips_image_new_from_memory(pix, len * in->Ysize, in->Xsize, in->Ysize, in->Bands, VIPS_FORMAT_UCHAR))) {
		g_free(pix);
		return vt_finish(scope, NULL, out);
	}
	g_signal_connect(t[2], "postclose", G_CALLBACK(vt_g_free), pix);
	vt_copy_meta(in, t[2]);
	return vt_finish(scope, t[2], out);
}

// The pixel buffers of guest transformations (pixelpool.go): rows written
// straight into a caller's buffer, and images read in place from one,
// which goes back to the pool when libvips closes the image.
extern void vitrinePixelBufferClosed(uintptr_t handle);

// vt_write_into computes in strip by strip on the calling thread, straight
// into dst. The engine runs libvips at concurrency 1, so a worker thread
// and a write-behind thread (vips_sink_disc) add only their hand-offs: two
// futex round trips per strip, more than the copying itself at 1 MP.
static int vt_write_into(VipsImage *in, void *dst, size_t size) {
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

static int vt_rgba_in_place(void *data, size_t size, int w, int h, uintptr_t handle, VipsImage **out) {
	VipsImage *im = vips_image_new_from_memory(data, size, w, h, 4, VIPS_FORMAT_UCHAR);
	if (!im)
		return -1;
	im->Type = VIPS_INTERPRETATION_sRGB;
	g_signal_connect(im, "postclose", G_CALLBACK(vt_buffer_closed), (void *) handle);
	*out = im;
	return 0;
}
*/
import "C"

import (
	"errors"
	"reflect"
	"runtime"
	"runtime/cgo"
	"unsafe"

	"github.com/davidbyttow/govips/v2/vips"
)

// This file is the engine's cgo shim to libvips, for operations govips
// v2.18 does not export (custom convolution masks, approximate box
// convolution, polar mappings, relational and ifthenelse). govips keeps the
// VipsImage of an ImageRef in an unexported field; the shim reads and
// replaces it at the field's offset, found by reflection at start-up (a
// govips upgrade that renames or retypes it panics at start, not mid-request).

// imageFieldOffset is the offset of ImageRef.image.
var imageFieldOffset = func() uintptr {
	f, ok := reflect.TypeOf((*vips.ImageRef)(nil)).Elem().FieldByName("image")
	if !ok || f.Type.Kind() != reflect.Pointer || f.Type.Elem().Name() != "_Ctype_struct__VipsImage" {
		panic("engine: govips ImageRef has no *C.VipsImage field named image; the cgo shim needs updating")
	}
	return f.Offset
}()

// imageSlot returns the address of r's VipsImage pointer.
func imageSlot(r *vips.ImageRef) **C.VipsImage {
	return (**C.VipsImage)(unsafe.Add(unsafe.Pointer(r), imageFieldOffset))
}

// vipsApply runs op on r's image and makes its output r's image, releasing
// the previous one (as govips' own operations do).
func vipsApply(r *vips.ImageRef, op func(in *C.VipsImage, out **C.VipsImage) C.int) error {
	slot := imageSlot(r)
	var out *C.VipsImage
	if op(*slot, &out) != 0 {
		return vipsError()
	}
	old := *slot
	*slot = out
	C.g_object_unref(C.gpointer(old))
	runtime.KeepAlive(r)
	return nil
}

// vipsError returns and clears libvips' error buffer.
func vipsError() error {
	msg := C.GoString(C.vips_error_buffer())
	C.vips_error_clear()
	if msg == "" {
		msg = "libvips operation failed"
	}
	return errors.New(msg)
}

// copyMemory renders r into memory, so that later operations read pixels
// instead of recomputing (or re-decoding) them.
func copyMemory(r *vips.ImageRef) error {
	return vipsApply(r, func(in *C.VipsImage, out **C.VipsImage) C.int {
		return C.vt_copy_memory(in, out)
	})
}

// modulateHSL applies ImageMagick's HSL modulation to a 3-band image
// (0..255); the result is float.
func modulateHSL(r *vips.ImageRef, b, s, dh float64) error {
	return vipsApply(r, func(in *C.VipsImage, out **C.VipsImage) C.int {
		return C.vt_modulate_hsl(in, out, C.double(b), C.double(s), C.double(dh))
	})
}

// Convolution precisions (VipsPrecision).
const (
	precisionInteger     = C.VIPS_PRECISION_INTEGER
	precisionFloat       = C.VIPS_PRECISION_FLOAT
	precisionApproximate = C.VIPS_PRECISION_APPROXIMATE
)

// convolve convolves r with a w x h mask (row-major) divided by scale.
func convolve(r *vips.ImageRef, mask []float64, w, h int, scale float64, precision int) error {
	if len(mask) != w*h || w <= 0 || h <= 0 {
		return errors.New("convolve: mask size mismatch")
	}
	return vipsApply(r, func(in *C.VipsImage, out **C.VipsImage) C.int {
		return C.vt_conv(in, out, (*C.double)(unsafe.Pointer(&mask[0])), C.int(w), C.int(h), C.double(scale), C.int(precision), 1)
	})
}

// motionU8 blurs the 8-bit image r with the taps (dx[i], dy[i]) weighted
// w[i] / 256 (the weights must add up to 256).
func motionU8(r *vips.ImageRef, dx, dy []int, w []uint16) error {
	n := len(dx)
	if n == 0 || len(dy) != n || len(w) != n {
		return errors.New("motion blur: tap count mismatch")
	}
	cdx, cdy, cw := make([]C.int, n), make([]C.int, n), make([]C.uint16_t, n)
	for i := range n {
		cdx[i], cdy[i], cw[i] = C.int(dx[i]), C.int(dy[i]), C.uint16_t(w[i])
	}
	return vipsApply(r, func(in *C.VipsImage, out **C.VipsImage) C.int {
		return C.vt_motion_u8(in, out, &cdx[0], &cdy[0], &cw[0], C.int(n))
	})
}

// rotationalBlur averages r over rotations about (cx, cy); see
// vt_rotational_blur for the parameters.
func rotationalBlur(r *vips.ImageRef, cx, cy float64, na, nr, k int) error {
	return vipsApply(r, func(in *C.VipsImage, out **C.VipsImage) C.int {
		return C.vt_rotational_blur(in, out, C.double(cx), C.double(cy), C.int(na), C.int(nr), C.int(k))
	})
}

// writeInto renders r, which must be dst's size, row by row into dst.
func writeInto(r *vips.ImageRef, dst []byte) error {
	if len(dst) == 0 {
		return errors.New("writeInto: empty buffer")
	}
	rc := C.vt_write_into(*imageSlot(r), unsafe.Pointer(&dst[0]), C.size_t(len(dst)))
	runtime.KeepAlive(r)
	if rc != 0 {
		return vipsError()
	}
	return nil
}

// rgbaInPlace makes r's image the w x h sRGB RGBA image in data, read in
// place; release runs once libvips has closed it. data must not be Go
// memory (libvips keeps the pointer).
func rgbaInPlace(r *vips.ImageRef, data []byte, w, h int, release func()) error {
	handle := cgo.NewHandle(release)
	return vipsApply(r, func(_ *C.VipsImage, out **C.VipsImage) C.int {
		rc := C.vt_rgba_in_place(unsafe.Pointer(&data[0]), C.size_t(len(data)), C.int(w), C.int(h), C.uintptr_t(handle), out)
		if rc != 0 {
			handle.Delete()
		}
		return rc
	})
}
