package filters

import "syscall"

// lowerPriority sets the calling thread's niceness; on Linux,
// setpriority(PRIO_PROCESS) applies to one thread when given its id.
// Raising niceness needs no privilege; failure leaves it as it was.
func lowerPriority(nice int) {
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice)
}
