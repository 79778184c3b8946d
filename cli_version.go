package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/vitrine/vitrine/engine"
)

const versionUsage = `usage:
  vitrine version
prints vitrine's module version, the commit it was built from, and the Go and libvips versions
`

// runVersion is `vitrine version`.
func runVersion(args []string) error {
	cmd := newCommand("version", versionUsage)
	if _, err := cmd.parse(args, 0, 0); err != nil {
		return err
	}
	module, commit := buildVersion()
	fmt.Printf("vitrine %s\ncommit  %s\ngo      %s\nlibvips %s\n", module, commit, runtime.Version(), engine.LibvipsVersion())
	return nil
}

// buildVersion returns the main module's version ("(devel)" when built from
// a checkout rather than `go install ...@version`) and the commit recorded
// by the go command's VCS stamping ("unknown" without it), marked
// "(modified)" when the work tree had uncommitted changes.
func buildVersion() (module, commit string) {
	module, commit = "(devel)", "unknown"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return module, commit
	}
	if info.Main.Version != "" {
		module = info.Main.Version
	}
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified {
		commit += " (modified)"
	}
	return module, commit
}
