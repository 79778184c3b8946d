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
	w := startWorker(before + 7)
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
