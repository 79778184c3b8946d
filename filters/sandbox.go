package filters

import (
	"crypto/rand"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// fixedTime is what the wall clock reads in a sandbox without the clock
// capability.
var fixedTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// moduleConfig is the sandbox of ABI.md section 6: WASI with no arguments,
// no environment, no pre-opened directories, empty stdin, discarded
// stdout and stderr; a fixed wall clock, a monotonic clock that only
// advances when read, and a deterministic random source, unless the
// manifest asks for the capability and the operator allows it (load refuses
// a filter asking for what is not allowed, so asked means granted here).
func moduleConfig(m *Manifest, start []string) wazero.ModuleConfig {
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStdin(strings.NewReader("")).
		WithStdout(io.Discard).
		WithStderr(io.Discard).
		WithStartFunctions(start...)
	if m.grants(CapClock) {
		// The sleep is each instance's own (instance.sleep): it ends with
		// the running call.
		cfg = cfg.WithSysWalltime().WithSysNanotime()
	} else {
		// wazero's default monotonic clock advances 1 ms per read, and its
		// default sleep returns at once: both what the ABI promises.
		cfg = cfg.WithWalltime(func() (int64, int32) {
			return fixedTime.Unix(), 0
		}, sys.ClockResolution(time.Microsecond))
	}
	if m.grants(CapRandom) {
		cfg = cfg.WithRandSource(rand.Reader)
	}
	return cfg
}

// grants reports whether the manifest asks for capability c (load refuses
// a filter asking for one the operator does not allow, so asked means
// granted once loaded).
func (m *Manifest) grants(c string) bool { return slices.Contains(m.Capabilities, c) }

// sleep is the clock capability's sleep (WASI poll_oneoff on a clock,
// which Go's time.Sleep and C's nanosleep use): it sleeps ns, but never
// past the end of the instance's running call, so that no guest outlives
// its timeout by sleeping. The call then ends at its next instruction.
func (inst *instance) sleep(ns int64) {
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	var done <-chan struct{}
	if ctx := inst.running(); ctx != nil {
		done = ctx.Done()
	}
	select {
	case <-t.C:
	case <-done:
	}
}
