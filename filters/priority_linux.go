package filters

import "syscall"

// lowerThreadPriority gives the calling OS thread the lowest scheduling
// priority (nice 19), leaving the rest of the process as it is: on Linux a
// thread's nice value is its own. The caller has locked its goroutine to
// the thread and never unlocks it.
func lowerThreadPriority() { _ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19) }
