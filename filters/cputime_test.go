//go:build unix

package filters

import (
	"syscall"
	"testing"
	"time"
)

// cpuMeter starts measuring the process's CPU time (user and system, every
// thread); the func it returns reports it per operation as cpu-ns/op. On a
// busy machine CPU time varies far less than wall time.
func cpuMeter(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// cpuTime is the CPU time the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
