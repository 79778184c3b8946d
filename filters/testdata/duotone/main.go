//go:build wasip1

// Command duotone is the benchmark guest of package filters: the same
// duotone as the native Go version in bench_test.go (luma mapped onto a
// dark-to-light gradient), speaking the raw ABI.
package main

import (
	"strconv"
	"unsafe"
)

func main() {}

//go:wasmimport vitrine param_get
func paramGet(namePtr, nameLen, bufPtr, bufLen uint32) int32

//go:wasmimport vitrine image_width
func imageWidth() int32

//go:wasmimport vitrine image_height
func imageHeight() int32

//go:wasmimport vitrine pixels_read
func pixelsRead(bufPtr, bufLen uint32) int32

//go:wasmimport vitrine pixels_write
func pixelsWrite(w, h, bufPtr, bufLen uint32) int32

//go:wasmexport vitrine_abi_v1
func marker() {}

func ptr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(&b[0]))) }

// color reads a parameter normalised by the host as rrggbbaa.
func color(name string) [3]uint8 {
	n := []byte(name)
	buf := make([]byte, 8)
	var c [3]uint8
	if paramGet(ptr(n), uint32(len(n)), ptr(buf), 8) != 8 {
		return c
	}
	for i := range c {
		v, _ := strconv.ParseUint(string(buf[2*i:2*i+2]), 16, 8)
		c[i] = uint8(v)
	}
	return c
}

// pix is kept across calls: the instance is reused, so the buffer is too.
var pix []byte

//go:wasmexport vitrine_transform
func transform() int32 {
	w, h := imageWidth(), imageHeight()
	n := int(4 * w * h)
	if cap(pix) < n {
		pix = make([]byte, n)
	}
	pix = pix[:n]
	if pixelsRead(ptr(pix), uint32(n)) != int32(n) {
		return 1
	}
	dark, light := color("dark"), color("light")
	var lut [3][256]uint8
	for c := 0; c < 3; c++ {
		for i := 0; i < 256; i++ {
			lut[c][i] = uint8((int(dark[c])*(255-i) + int(light[c])*i + 127) / 255)
		}
	}
	// 32 pixels per iteration: wazero checks for termination at every
	// loop back-edge (a call into Go), so fewer iterations cost less.
	row := pix[:n]
	for ; len(row) >= 128; row = row[128:] {
		q := (*[128]byte)(row)
		tone(q[0:4], &lut)
		tone(q[4:8], &lut)
		tone(q[8:12], &lut)
		tone(q[12:16], &lut)
		tone(q[16:20], &lut)
		tone(q[20:24], &lut)
		tone(q[24:28], &lut)
		tone(q[28:32], &lut)
		tone(q[32:36], &lut)
		tone(q[36:40], &lut)
		tone(q[40:44], &lut)
		tone(q[44:48], &lut)
		tone(q[48:52], &lut)
		tone(q[52:56], &lut)
		tone(q[56:60], &lut)
		tone(q[60:64], &lut)
		tone(q[64:68], &lut)
		tone(q[68:72], &lut)
		tone(q[72:76], &lut)
		tone(q[76:80], &lut)
		tone(q[80:84], &lut)
		tone(q[84:88], &lut)
		tone(q[88:92], &lut)
		tone(q[92:96], &lut)
		tone(q[96:100], &lut)
		tone(q[100:104], &lut)
		tone(q[104:108], &lut)
		tone(q[108:112], &lut)
		tone(q[112:116], &lut)
		tone(q[116:120], &lut)
		tone(q[120:124], &lut)
		tone(q[124:128], &lut)
	}
	for ; len(row) >= 4; row = row[4:] {
		tone(row, &lut)
	}
	return pixelsWrite(uint32(w), uint32(h), ptr(pix), uint32(n))
}

// tone maps one pixel (p[0:3]) onto the gradient.
func tone(p []byte, lut *[3][256]uint8) {
	p = p[:4]
	y := uint8((77*uint32(p[0]) + 150*uint32(p[1]) + 29*uint32(p[2]) + 128) >> 8)
	p[0], p[1], p[2] = lut[0][y], lut[1][y], lut[2][y]
}
