//go:build !linux

package filters

import "errors"

// lowerPriority does nothing where threads have no niceness of their own.
func lowerPriority(int) {}

// idlePriority fails where there is no SCHED_IDLE policy.
func idlePriority() error { return errors.New("no SCHED_IDLE here") }
