package filters

import (
	"crypto/rand"
	"io"
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
	granted := func(c string) bool {
		for _, x := range m.Capabilities {
			if x == c {
				return true
			}
		}
		return false
	}
	if granted(CapClock) {
		cfg = cfg.WithSysWalltime().WithSysNanotime().WithSysNanosleep()
	} else {
		// wazero's default monotonic clock advances 1 ms per read, and its
		// default sleep returns at once: both what the ABI promises.
		cfg = cfg.WithWalltime(func() (int64, int32) {
			return fixedTime.Unix(), 0
		}, sys.ClockResolution(time.Microsecond))
	}
	if granted(CapRandom) {
		cfg = cfg.WithRandSource(rand.Reader)
	}
	return cfg
}
