//go:build unix && !linux

package filters

const mapNoReserve = 0

// releasePages is a no-op where the syscall package has no madvise: the
// pages go back when the mapping is removed.
func releasePages([]byte) {}
