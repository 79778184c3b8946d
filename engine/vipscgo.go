package engine

/*
#cgo pkg-config: vips
#cgo CFLAGS: -O3
#cgo LDFLAGS: -lm
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <vips/vips.h>

#include "blur.h"

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

// The pooled pixel buffers (pixelpool.go) of guest transformations and
// blur kernels: rows written straight into a caller's buffer, and images
// read in place from one, which goes back to the pool when libvips closes
// the image.
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

// vt_in_place makes *out an image read in place from data, whose handle
// goes back to Go when libvips closes the image.
static int vt_in_place(void *data, size_t size, int w, int h, int bands, VipsBandFormat fmt, uintptr_t handle, VipsImage **out) {
	VipsImage *im = vips_image_new_from_memory(data, size, w, h, bands, fmt);
	if (!im)
		return -1;
	g_signal_connect(im, "postclose", G_CALLBACK(vt_buffer_closed), (void *) handle);
	*out = im;
	return 0;
}

static size_t vt_image_bytes(VipsImage *im) {
	return VIPS_IMAGE_SIZEOF_IMAGE(im);
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
// w[i] (normalised; vt_motion_u8).
func motionU8(r *vips.ImageRef, dx, dy []int, w []float64) error {
	n := len(dx)
	if n == 0 || len(dy) != n || len(w) != n {
		return errors.New("motion blur: tap count mismatch")
	}
	if r.BandFormat() != vips.BandFormatUchar {
		return errors.New("motion blur: 8-bit image needed")
	}
	cdx, cdy, cw := make([]C.int, n), make([]C.int, n), make([]C.double, n)
	for i := range n {
		cdx[i], cdy[i], cw[i] = C.int(dx[i]), C.int(dy[i]), C.double(w[i])
	}
	return kernelInPlace(r, func(src, dst *C.VipsPel, in *C.VipsImage) C.int {
		return C.vt_motion_u8(src, dst, in.Xsize, in.Ysize, in.Bands, &cdx[0], &cdy[0], &cw[0], C.int(n))
	})
}

// radialBlur averages r (uchar, ushort or float) over rotations about
// (cx, cy): k of na angle steps, nr radii (vt_radial).
func radialBlur(r *vips.ImageRef, cx, cy float64, na, nr, k int) error {
	return kernelInPlace(r, func(src, dst *C.VipsPel, in *C.VipsImage) C.int {
		return C.vt_radial(src, dst, in.Xsize, in.Ysize, in.Bands, in.BandFmt, C.double(cx), C.double(cy), C.int(na), C.int(nr), C.int(k))
	})
}

// adaptiveU8 is the adaptive blur of an 8-bit sRGB or grey image whose
// gaussian is libvips' gaussmat(sigma, minAmpl) (vt_adaptive_u8).
func adaptiveU8(r *vips.ImageRef, sigma, minAmpl float64) error {
	return kernelInPlace(r, func(src, dst *C.VipsPel, in *C.VipsImage) C.int {
		return C.vt_adaptive_u8(src, dst, in.Xsize, in.Ysize, in.Bands, C.double(sigma), C.double(minAmpl))
	})
}

// kernelInPlace replaces r's image by the one kernel computes from its
// pixels: r is rendered into a pooled buffer (src), the kernel writes the
// result, of the same size, bands and format, into another (dst), which
// libvips then reads in place with r's metadata. Pooled buffers are not
// faulted in afresh each time, which at 12 MP cost more than the blurs.
func kernelInPlace(r *vips.ImageRef, kernel func(src, dst *C.VipsPel, in *C.VipsImage) C.int) error {
	size := int(C.vt_image_bytes(*imageSlot(r)))
	src, freeSrc, err := pixels.get(size)
	if err != nil {
		return err
	}
	defer freeSrc()
	if err := writeInto(r, src); err != nil {
		return err
	}
	dst, free, err := pixels.get(size)
	if err != nil {
		return err
	}
	err = vipsApply(r, func(in *C.VipsImage, out **C.VipsImage) C.int {
		if kernel((*C.VipsPel)(unsafe.Pointer(&src[0])), (*C.VipsPel)(unsafe.Pointer(&dst[0])), in) != 0 ||
			imageInPlace(out, dst, in.Xsize, in.Ysize, in.Bands, in.BandFmt, free) != 0 {
			return -1
		}
		C.vt_copy_meta(in, *out)
		return 0
	})
	if err != nil {
		free()
	}
	return err
}

// imageInPlace sets *out to a w x h image read in place from data, which
// must not be Go memory (libvips keeps the pointer); release runs once
// libvips has closed the image. On failure (-1) release is not run.
func imageInPlace(out **C.VipsImage, data []byte, w, h, bands C.int, format C.VipsBandFormat, release func()) C.int {
	handle := cgo.NewHandle(release)
	if C.vt_in_place(unsafe.Pointer(&data[0]), C.size_t(len(data)), w, h, bands, format, C.uintptr_t(handle), out) != 0 {
		handle.Delete()
		return -1
	}
	return 0
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
	return vipsApply(r, func(_ *C.VipsImage, out **C.VipsImage) C.int {
		if imageInPlace(out, data, C.int(w), C.int(h), 4, C.VIPS_FORMAT_UCHAR, release) != 0 {
			return -1
		}
		(*out).Type = C.VIPS_INTERPRETATION_sRGB
		return 0
	})
}
