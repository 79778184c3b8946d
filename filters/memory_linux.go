package filters

import "syscall"

// mapNoReserve keeps a guest's reserved memory out of the commit charge.
const mapNoReserve = syscall.MAP_NORESERVE

// releasePages gives the pages of b back to the system at once; b stays
// mapped and reads as zeros.
func releasePages(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }
