//go:build unix

package filters

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mmapMemory backs a guest's linear memory with one anonymous mapping of
// its maximum size, reserved but not committed. Why: wazero's default
// memory is a Go slice that is copied on every memory.grow, which made a
// guest growing to tens of megabytes spend most of its time in memmove;
// here growing only extends the slice over pages the kernel commits on
// first touch, and closing an instance returns them to the system at once
// instead of at the next Go garbage collection.
type mmapMemory struct{ buf []byte }

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:size]
}

func (m *mmapMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}

// allocateMemory is the experimental.MemoryAllocator of every instance; it
// falls back to a Go slice when the mapping fails.
var allocateMemory = experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
	buf, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
	if err != nil || max == 0 {
		return &sliceMemory{max: max}
	}
	return &mmapMemory{buf: buf}
})
