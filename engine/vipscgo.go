package engine

/*
#cgo pkg-config: vips
#cgo CFLAGS: -O3
#cgo LDFLAGS: -lm
#include "vipscgo.h"
#include "blur.h"
*/
import "C"

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"runtime/cgo"
	"unsafe"

	"github.com/davidbyttow/govips/v2/vips"
)

// This file is the engine's cgo shim to libvips (its C is vipscgo.c), for
// operations govips v2.18 does not export (custom convolution masks,
// approximate box convolution, polar mappings, relational and ifthenelse)
// and for the pooled pixel buffers of the blur kernels and guests.

// imageField is the layout of the one govips internal the shim relies on,
// checked when the package loads (imageSlot).
var imageField = findImageField()

// findImageField finds ImageRef's unexported `image *C.VipsImage` field by
// reflection on the type (no value is read here), and panics, at start-up
// rather than mid-request, when a govips upgrade renamed or retyped it.
func findImageField() reflect.StructField {
	f, ok := reflect.TypeFor[vips.ImageRef]().FieldByName("image")
	if !ok || f.Type.Kind() != reflect.Pointer || f.Type.Elem().Name() != "_Ctype_struct__VipsImage" ||
		f.Type.Elem().Size() != unsafe.Sizeof(C.VipsImage{}) {
		panic("engine: govips ImageRef has no *C.VipsImage field named image; the cgo shim (vipscgo.go) needs updating")
	}
	return f
}

// imageSlot returns the address of r's VipsImage pointer: the engine's only
// reach into govips' internals, and its only unsafe step on an ImageRef.
//
// govips v2.18 offers no public route. No method or function returns an
// ImageRef's VipsImage or builds an ImageRef around one; the only public
// ways in and out of an ImageRef are encoded files (NewImageFromBuffer,
// Export*) and copies of the pixels (ToBytes, NewImageFromGoImage), which
// would render every lazy graph of this shim into Go memory, encode or copy
// it once more, and drop its metadata. Even an exported *C.VipsImage would
// not do without a conversion: cgo gives each package its own C types. So
// the field is reached at the offset findImageField checked, and
// TestImageSlot fails when what is there is not r's image.
func imageSlot(r *vips.ImageRef) **C.VipsImage {
	return (**C.VipsImage)(unsafe.Add(unsafe.Pointer(r), imageField.Offset))
}

// imageBytes is the size of r's pixels in bytes, from libvips' header.
func imageBytes(r *vips.ImageRef) int {
	n := int(C.vt_image_bytes(*imageSlot(r)))
	runtime.KeepAlive(r)
	return n
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
	size := imageBytes(r)
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

// stopOnCancel makes libvips give up on r's current image, and on every
// image computed from it, once ctx is done: vips_image_set_kill marks it, and
// the next request for its pixels (each tile or strip a thread asks for)
// fails, so a render whose client left or whose time ran out stops within a
// tile instead of running to the end. It holds a reference of its own to
// the image until the func it returns is called, or, when ctx ended first,
// until the image is marked.
func stopOnCancel(ctx context.Context, r *vips.ImageRef) (stop func()) {
	img := *imageSlot(r)
	runtime.KeepAlive(r)
	C.g_object_ref(C.gpointer(img))
	unwatch := context.AfterFunc(ctx, func() {
		C.vips_image_set_kill(img, C.TRUE)
		C.g_object_unref(C.gpointer(img))
	})
	return func() {
		if unwatch() { // the kill will never run: the reference is ours to drop
			C.g_object_unref(C.gpointer(img))
		}
	}
}
