package filters

import (
	"syscall"
	"unsafe"
)

// lowerPriority sets the calling thread's niceness; on Linux,
// setpriority(PRIO_PROCESS) applies to one thread when given its id.
// Raising niceness needs no privilege; failure leaves it as it was.
func lowerPriority(nice int) {
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice)
}

// schedIdle is Linux's SCHED_IDLE scheduling policy (sched.h).
const schedIdle = 5

// idlePriority moves the calling thread to SCHED_IDLE: it runs only on a
// core that no other thread wants, a thread of the normal policy waking on
// its core takes the core at once, and the kernel counts a core running
// only such threads as idle when it places a waking thread. Lowering a
// thread's policy needs no privilege; failure leaves it as it was, and the
// caller falls back to a niceness.
func idlePriority() error {
	var param struct{ priority int32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, schedIdle, uintptr(unsafe.Pointer(&param))); e != 0 {
		return e
	}
	return nil
}
