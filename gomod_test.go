package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// TestDependenciesNotDowngraded fails when go.mod requires a direct
// dependency at a version older than one an earlier commit of go.mod
// required, unless the require line carries a comment saying why: a
// dependency must not move backwards silently (as a side effect of another
// change's `go get`). It reads go.mod's history with git, and skips where
// there is none (not a checkout, or a shallow clone).
func TestDependenciesNotDowngraded(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	commits, err := exec.Command("git", "log", "--format=%H", "--", "go.mod").Output()
	if err != nil || len(commits) == 0 {
		t.Skipf("no history of go.mod to compare with (%v)", err)
	}
	if out, _ := exec.Command("git", "rev-parse", "--is-shallow-repository").Output(); strings.TrimSpace(string(out)) == "true" {
		t.Skip("a shallow clone has no complete history of go.mod")
	}
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	// highest[path] is the newest version any commit required path at
	// directly, and that commit.
	type seen struct{ version, commit string }
	highest := map[string]seen{}
	for _, c := range strings.Fields(string(commits)) {
		old, err := exec.Command("git", "show", c+":go.mod").Output()
		if err != nil {
			t.Fatalf("git show %s:go.mod: %v", c, err)
		}
		f, err := modfile.Parse("go.mod@"+c, old, nil)
		if err != nil {
			continue // a go.mod this toolchain cannot read says nothing here
		}
		for _, r := range f.Require {
			if r.Indirect {
				continue
			}
			if h, ok := highest[r.Mod.Path]; !ok || semver.Compare(r.Mod.Version, h.version) > 0 {
				highest[r.Mod.Path] = seen{r.Mod.Version, c[:12]}
			}
		}
	}
	for _, r := range cur.Require {
		h, ok := highest[r.Mod.Path]
		if r.Indirect || !ok || semver.Compare(r.Mod.Version, h.version) >= 0 {
			continue
		}
		if r.Syntax != nil && len(r.Syntax.Comments.Suffix) > 0 {
			continue // the line says why
		}
		t.Errorf("go.mod requires %s %s, older than %s in commit %s: move it back up, or say why in a comment on its line",
			r.Mod.Path, r.Mod.Version, h.version, h.commit)
	}
}
