//go:build !unix

package filters

import "github.com/tetratelabs/wazero/experimental"

// allocateMemory backs every instance's memory with a Go slice.
var allocateMemory = experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
	return &sliceMemory{max: max}
})
