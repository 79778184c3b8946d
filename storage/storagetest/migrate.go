package storagetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// TestMigrations runs the schema-migration suite. fresh returns the DSN of a
// new, empty database that can be opened more than once (so not
// sqlite::memory:).
func TestMigrations(t *testing.T, fresh func(t *testing.T) string) {
	cases := []struct {
		name string
		fn   func(t *testing.T, dsn string)
	}{
		{"FreshIsLatest", testMigrateFresh},
		{"UpgradeFromStep1", testMigrateFromStep1},
		{"ConcurrentStart", testMigrateConcurrent},
		{"NewerThanBinary", testMigrateTooNew},
		{"DryRun", testMigrateDryRun},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, fresh(t)) })
	}
}

func open(t *testing.T, dsn string, opts storage.Options) *storage.DB {
	t.Helper()
	db, err := storage.Open(ctx(t), dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// appliedSteps returns the versions in schema_migrations, in order.
func appliedSteps(t *testing.T, db *storage.DB) []int {
	t.Helper()
	rows, err := db.SQL().QueryContext(ctx(t), "SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return vs
}

// wantAllSteps checks that schema_migrations lists every step once.
func wantAllSteps(t *testing.T, db *storage.DB) {
	t.Helper()
	got := appliedSteps(t, db)
	n := len(storage.Migrations())
	if len(got) != n {
		t.Fatalf("schema_migrations = %v, want steps 1..%d once each", got, n)
	}
	for i, v := range got {
		if v != i+1 {
			t.Fatalf("schema_migrations = %v, want steps 1..%d once each", got, n)
		}
	}
	if v, err := db.SchemaVersion(ctx(t)); err != nil || v != n {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, n)
	}
}

func testMigrateFresh(t *testing.T, dsn string) {
	db := open(t, dsn, storage.Options{})
	wantAllSteps(t, db)
	if p, err := db.PendingMigrations(ctx(t)); err != nil || len(p) != 0 {
		t.Fatalf("PendingMigrations = %v, %v; want none", p, err)
	}
	// Opening again applies nothing.
	again := open(t, dsn, storage.Options{})
	if applied, err := again.Migrate(ctx(t)); err != nil || len(applied) != 0 {
		t.Fatalf("second Migrate = %v, %v; want nothing applied", applied, err)
	}
	wantAllSteps(t, again)
}

// testMigrateFromStep1 makes a database the way the release before
// versioned migrations did (step 1's DDL, no schema_migrations), stores an
// image in it, and opens it with this binary.
func testMigrateFromStep1(t *testing.T, dsn string) {
	old := open(t, dsn, storage.Options{SkipMigrate: true})
	for _, s := range storage.Migrations()[0].Statements(old.Dialect()) {
		if _, err := old.SQL().ExecContext(ctx(t), s); err != nil {
			t.Fatalf("step 1: %v", err)
		}
	}
	added := base.UnixMicro()
	if _, err := old.SQL().ExecContext(ctx(t), fmt.Sprintf(`INSERT INTO images
		(user_name, identifier, size, extension, mime, width, height, checksum, added, updated)
		VALUES ('u', 'old', 3, 'png', 'image/png', 1, 2, 'c', %d, %d)`, added, added)); err != nil {
		t.Fatal(err)
	}
	if v, err := old.SchemaVersion(ctx(t)); err != nil || v != 1 {
		t.Fatalf("SchemaVersion of a pre-migrations database = %d, %v; want 1", v, err)
	}
	if p, err := old.PendingMigrations(ctx(t)); err != nil || len(p) != len(storage.Migrations())-1 {
		t.Fatalf("PendingMigrations = %d steps, %v; want all but step 1", len(p), err)
	}
	old.Close()

	db := open(t, dsn, storage.Options{})
	wantAllSteps(t, db)
	img, err := db.Image(ctx(t), "u", "old")
	if err != nil {
		t.Fatal(err)
	}
	if !img.Updated.Equal(base) || img.Version != added {
		t.Fatalf("upgraded image = %+v; want Updated %v and Version %d", img, base, added)
	}
	// The per-user count (step 6) starts from the existing images.
	if page, err := db.Images(ctx(t), storage.Query{Users: []string{"u"}, Limit: 1}); err != nil || page.Hits != 1 {
		t.Fatalf("listing hits after the upgrade = %d, %v; want 1", page.Hits, err)
	}
	// The upgraded schema works: metadata changes move the version on.
	if err := db.SetMetadata(ctx(t), "u", "old", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	img2, err := db.Image(ctx(t), "u", "old")
	if err != nil || img2.Version <= img.Version {
		t.Fatalf("version after a metadata change = %d, %v; want more than %d", img2.Version, err, img.Version)
	}
}

// testMigrateConcurrent migrates one fresh database from several handles at
// once: every step must be applied exactly once in total.
func testMigrateConcurrent(t *testing.T, dsn string) {
	const n = 4
	dbs := make([]*storage.DB, n)
	for i := range dbs {
		dbs[i] = open(t, dsn, storage.Options{SkipMigrate: true})
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		applied = map[int]int{}
		errs    []error
	)
	start := make(chan struct{})
	for _, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			steps, err := db.Migrate(context.Background())
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			for _, s := range steps {
				applied[s.Version]++
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("concurrent Migrate: %v", errors.Join(errs...))
	}
	for _, m := range storage.Migrations() {
		if applied[m.Version] != 1 {
			t.Errorf("step %d applied %d times, want once", m.Version, applied[m.Version])
		}
	}
	wantAllSteps(t, dbs[0])
	// And the result is usable from every handle.
	for i, db := range dbs {
		mustInsert(t, db, image("u", fmt.Sprintf("i%d", i), base.Add(time.Duration(i)*time.Second)))
	}
}

func testMigrateTooNew(t *testing.T, dsn string) {
	db := open(t, dsn, storage.Options{})
	next := len(storage.Migrations()) + 1
	if _, err := db.SQL().ExecContext(ctx(t), fmt.Sprintf(
		"INSERT INTO schema_migrations (version, name, applied) VALUES (%d, 'from the future', 0)", next)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, skip := range []bool{false, true} {
		db, err := storage.Open(ctx(t), dsn, storage.Options{SkipMigrate: skip})
		if !skip {
			if !errors.Is(err, storage.ErrSchemaTooNew) || !strings.Contains(err.Error(), fmt.Sprintf("step %d", next)) {
				t.Fatalf("Open of a newer database = %v; want ErrSchemaTooNew naming step %d", err, next)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.PendingMigrations(ctx(t)); !errors.Is(err, storage.ErrSchemaTooNew) {
			t.Fatalf("PendingMigrations = %v; want ErrSchemaTooNew", err)
		}
		if _, err := db.Migrate(ctx(t)); !errors.Is(err, storage.ErrSchemaTooNew) {
			t.Fatalf("Migrate = %v; want ErrSchemaTooNew", err)
		}
	}
}

func testMigrateDryRun(t *testing.T, dsn string) {
	db := open(t, dsn, storage.Options{SkipMigrate: true})
	pending, err := db.PendingMigrations(ctx(t))
	if err != nil || len(pending) != len(storage.Migrations()) {
		t.Fatalf("PendingMigrations on an empty database = %d steps, %v; want all", len(pending), err)
	}
	if v, err := db.SchemaVersion(ctx(t)); err != nil || v != 0 {
		t.Fatalf("SchemaVersion = %d, %v; want 0", v, err)
	}
	if _, err := db.Migrate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if pending, err := db.PendingMigrations(ctx(t)); err != nil || len(pending) != 0 {
		t.Fatalf("PendingMigrations after Migrate = %v, %v; want none", pending, err)
	}
}
