package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/vitrine/vitrine/storage"
)

// TestCLIAudit: changes made by `vitrine keys` are in the audit log as made
// by "cli", through the same storage code as the API's.
func TestCLIAudit(t *testing.T) {
	dir := t.TempDir()
	data := []string{"--data", dir}
	keys := func(args ...string) []string { return append(append([]string{"keys"}, args...), data...) }
	mustCLI(t, nil, keys("add", "eve", "--group", "read-only")...)
	mustCLI(t, nil, keys("rotate", "eve")...)
	mustCLI(t, nil, keys("delete", "eve")...)
	db := openDataDB(t, dir)
	entries, _, err := db.AuditLog(context.Background(), storage.AuditQuery{Actor: "cli", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range slices.Backward(entries) {
		got = append(got, fmt.Sprintf("%s %s %s", e.Actor, e.Action, e.Target))
	}
	want := []string{"cli key.create eve", "cli rule.create eve", "cli key.update eve", "cli key.delete eve"}
	if !slices.Equal(got, want) {
		t.Fatalf("audit log of the CLI: %q, want %q", got, want)
	}
}
