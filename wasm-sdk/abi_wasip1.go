//go:build wasip1

package vitrine

// This file is the raw ABI of ABI.md and nothing else: the host functions the
// module imports from "vitrine", the three exports the host looks for, and
// thin wrappers that pass Go slices and strings as (pointer, length) pairs.
// Everything else in the package is ordinary Go built on these wrappers.

import "unsafe"

//go:wasmimport vitrine param_get
func rawParamGet(namePtr unsafe.Pointer, nameLen uint32, bufPtr unsafe.Pointer, bufLen uint32) int32

//go:wasmimport vitrine settings_get
func rawSettingsGet(bufPtr unsafe.Pointer, bufLen uint32) int32

//go:wasmimport vitrine image_width
func rawImageWidth() int32

//go:wasmimport vitrine image_height
func rawImageHeight() int32

//go:wasmimport vitrine pixels_read
func rawPixelsRead(bufPtr unsafe.Pointer, bufLen uint32) int32

//go:wasmimport vitrine pixels_write
func rawPixelsWrite(width, height int32, bufPtr unsafe.Pointer, bufLen uint32) int32

//go:wasmimport vitrine event_get
func rawEventGet(bufPtr unsafe.Pointer, bufLen uint32) int32

//go:wasmimport vitrine body_read
func rawBodyRead(bufPtr unsafe.Pointer, bufLen uint32) int32

//go:wasmimport vitrine body_write
func rawBodyWrite(ptr unsafe.Pointer, length uint32) int32

//go:wasmimport vitrine metadata_get
func rawMetadataGet(bufPtr unsafe.Pointer, bufLen uint32) int32

//go:wasmimport vitrine metadata_set
func rawMetadataSet(ptr unsafe.Pointer, length uint32) int32

//go:wasmimport vitrine stats_add
func rawStatsAdd(namePtr unsafe.Pointer, nameLen uint32, delta int64) int32

//go:wasmimport vitrine stats_set
func rawStatsSet(namePtr unsafe.Pointer, nameLen uint32, jsonPtr unsafe.Pointer, jsonLen uint32) int32

//go:wasmimport vitrine log
func rawLog(level int32, ptr unsafe.Pointer, length uint32) int32

//go:wasmimport vitrine reject
func rawReject(status int32, ptr unsafe.Pointer, length uint32) int32

// exportABIv1 is the version marker; the host never calls it.
//
//go:wasmexport vitrine_abi_v1
func exportABIv1() {}

//go:wasmexport vitrine_transform
func exportTransform() int32 { return runTransformation() }

//go:wasmexport vitrine_on_event
func exportOnEvent() int32 { return runListener() }

// Lengths never exceed what a wasm32 memory can hold, so the uint32
// conversions below cannot truncate.

func bytesPtr(b []byte) unsafe.Pointer  { return unsafe.Pointer(unsafe.SliceData(b)) }
func stringPtr(s string) unsafe.Pointer { return unsafe.Pointer(unsafe.StringData(s)) }

func hostParamGet(name string, buf []byte) int32 {
	return rawParamGet(stringPtr(name), uint32(len(name)), bytesPtr(buf), uint32(len(buf)))
}

func hostSettingsGet(buf []byte) int32 { return rawSettingsGet(bytesPtr(buf), uint32(len(buf))) }

func hostImageWidth() int32 { return rawImageWidth() }

func hostImageHeight() int32 { return rawImageHeight() }

func hostPixelsRead(buf []byte) int32 { return rawPixelsRead(bytesPtr(buf), uint32(len(buf))) }

func hostPixelsWrite(width, height int32, pix []byte) int32 {
	return rawPixelsWrite(width, height, bytesPtr(pix), uint32(len(pix)))
}

func hostEventGet(buf []byte) int32 { return rawEventGet(bytesPtr(buf), uint32(len(buf))) }

func hostBodyRead(buf []byte) int32 { return rawBodyRead(bytesPtr(buf), uint32(len(buf))) }

func hostBodyWrite(b []byte) int32 { return rawBodyWrite(bytesPtr(b), uint32(len(b))) }

func hostMetadataGet(buf []byte) int32 { return rawMetadataGet(bytesPtr(buf), uint32(len(buf))) }

func hostMetadataSet(doc []byte) int32 { return rawMetadataSet(bytesPtr(doc), uint32(len(doc))) }

func hostStatsAdd(name string, delta int64) int32 {
	return rawStatsAdd(stringPtr(name), uint32(len(name)), delta)
}

func hostStatsSet(name string, value []byte) int32 {
	return rawStatsSet(stringPtr(name), uint32(len(name)), bytesPtr(value), uint32(len(value)))
}

func hostLog(level int32, msg string) int32 { return rawLog(level, stringPtr(msg), uint32(len(msg))) }

func hostReject(status int32, msg string) int32 {
	return rawReject(status, stringPtr(msg), uint32(len(msg)))
}
