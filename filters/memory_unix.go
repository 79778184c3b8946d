//go:build unix

package filters

import (
	"runtime"
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

// Free releases the pages at once but keeps the mapping: the mapping is
// removed by a cleanup once the memory object is unreachable. Why: wazero
// frees an instance's memory when the instance closes, which can happen
// while a guest still runs on it (closing the runtime under a running
// call); compiled code touching an unmapped page would crash the whole
// process, and touching it once the address was mapped again would write
// into someone else's memory, while a released page reads as zeros.
// wazero drops its own reference to the memory object when it frees it, so
// the instance holds one too (instance.memory): the mapping lasts as long
// as the instance, which a running call holds.
func (m *mmapMemory) Free() {
	if m.buf != nil {
		releasePages(m.buf)
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
	m := &mmapMemory{buf: buf}
	runtime.AddCleanup(m, func(b []byte) { _ = syscall.Munmap(b) }, buf)
	return m
})
