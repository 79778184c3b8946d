package storage

import (
	"context"
	"path/filepath"
	"testing"
)

// TestCopyCoversSchema: every table of the schema is copied or left on
// purpose, so a table a later migration adds cannot be forgotten by
// vitrine copy.
func TestCopyCoversSchema(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "vitrine.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var names []string
	if err := db.bun.NewRaw("SELECT name FROM sqlite_master WHERE type = 'table'").Scan(ctx, &names); err != nil {
		t.Fatal(err)
	}
	copied := map[string]bool{}
	for _, c := range copyTables {
		copied[c.name] = true
	}
	for _, n := range names {
		if !copied[n] && !copySkipped[n] {
			t.Errorf("table %s is neither in copyTables nor in copySkipped (copyrows.go)", n)
		}
		delete(copied, n)
	}
	for n := range copied {
		t.Errorf("copyTables names %s, which the schema does not have", n)
	}
}
