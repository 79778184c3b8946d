//go:build asan

package engine

// #include <stdlib.h>
import "C"

import (
	"errors"
	"sync"
	"unsafe"
)

// Under AddressSanitizer (go test -asan, `make asan`) pixel buffers are
// exact-size C allocations, not pooled mappings rounded up to a megabyte,
// so that a kernel reading or writing past its image is reported.
const exactBuffers = true

func exactBuffer(n int) ([]byte, func(), error) {
	p := C.malloc(C.size_t(n))
	if p == nil {
		return nil, nil, errors.New("engine: out of memory for a pixel buffer")
	}
	var once sync.Once
	return unsafe.Slice((*byte)(p), n), func() { once.Do(func() { C.free(p) }) }, nil
}
