package vitrine

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// The codes an export returns when a call fails (the host logs them).
const (
	exitOK           int32 = 0
	exitFuncError    int32 = 1 // the registered function returned an error or rejected
	exitPanic        int32 = 2 // the registered function panicked
	exitSDKError     int32 = 3 // reading the input or writing the output failed
	exitUnregistered int32 = 4 // nothing of that kind is registered
)

// call runs f, the body of one export, and turns its outcome into the
// export's result: errors and panics are logged at LevelError (a rejection is
// not an error of the filter and is not logged), a panic is recovered so the
// instance stays usable.
func call(f func() (code int32, err error)) (code int32) {
	defer func() {
		if r := recover(); r != nil {
			// The stack names the filter's line that panicked; the host cuts
			// the line at 4096 bytes, which keeps the innermost frames.
			Log(LevelError, fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))
			code = exitPanic
		}
	}()
	code, err := f()
	if err != nil {
		var rej *Rejection
		if !errors.As(err, &rej) {
			Log(LevelError, err.Error())
		}
	}
	return code
}
