package vitrine

import "fmt"

// Level is the severity of a log line.
type Level int32

// The levels of ABI.md's log function.
const (
	LevelDebug Level = 0
	LevelInfo  Level = 1
	LevelWarn  Level = 2
	LevelError Level = 3
)

// Log writes msg to the server's log at level, tagged with the filter's name.
// The host cuts lines at 4096 bytes. Standard output and standard error are
// discarded in the sandbox, so this is the only way to log.
func Log(level Level, msg string) {
	// A failed log line has nowhere to be reported.
	_ = hostLog(int32(level), msg)
}

// Logf writes a line formatted as fmt.Sprintf does to the server's log at
// level.
func Logf(level Level, format string, args ...any) {
	Log(level, fmt.Sprintf(format, args...))
}
