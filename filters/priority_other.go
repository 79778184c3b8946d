//go:build !linux

package filters

// lowerThreadPriority does nothing where a thread's priority is not its own.
func lowerThreadPriority() {}
