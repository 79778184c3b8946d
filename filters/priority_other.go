//go:build !linux

package filters

// lowerPriority does nothing where threads have no niceness of their own.
func lowerPriority(int) {}
