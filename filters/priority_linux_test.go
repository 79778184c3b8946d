package filters

import (
	"syscall"
	"testing"
)

// threadNice reads the calling thread's niceness. The raw getpriority
// system call answers 20 - nice, so that it is never negative.
func threadNice(t *testing.T) int {
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	return 20 - p
}

// TestWorkerPriority: a worker's jobs run on a thread at the niceness it
// was given, and the goroutines around it keep theirs.
func TestWorkerPriority(t *testing.T) {
	before := threadNice(t)
	w := startWorker(priority{nice: before + 7})
	defer w.stop()
	var got int
	w.do(func() { got = threadNice(t) })
	if got != before+7 {
		t.Fatalf("a worker's job runs at nice %d, want %d", got, before+7)
	}
	if n := threadNice(t); n != before {
		t.Fatalf("the caller's thread is at nice %d now, was %d", n, before)
	}
}

// threadPolicy reads the calling thread's scheduling policy.
func threadPolicy(t *testing.T) int {
	p, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, 0, 0, 0)
	if e != 0 {
		t.Fatal(e)
	}
	return int(p)
}

// TestWorkerIdlePolicy: under the idle policy a worker's jobs run on a
// SCHED_IDLE thread, and the goroutines around it keep the normal policy.
func TestWorkerIdlePolicy(t *testing.T) {
	before := threadPolicy(t)
	w := startWorker(priority{idle: true, nice: 19})
	defer w.stop()
	var got int
	w.do(func() { got = threadPolicy(t) })
	if got != schedIdle {
		t.Fatalf("a worker's job runs under policy %d, want SCHED_IDLE (%d)", got, schedIdle)
	}
	if p := threadPolicy(t); p != before {
		t.Fatalf("the caller's thread is under policy %d now, was %d", p, before)
	}
}
