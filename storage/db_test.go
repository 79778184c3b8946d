package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/storage/storagetest"
)

func TestSQLite(t *testing.T) {
	dir := t.TempDir()
	storagetest.TestDBWithSecret(t, sqliteOpener(dir, nil), func(t *testing.T, secret []byte) (*storage.DB, func([]byte) *storage.DB) {
		dsn := "sqlite://" + filepath.Join(t.TempDir(), "enc", "vitrine.db")
		return openDB(t, dsn, secret), func(s []byte) *storage.DB { return openDB(t, dsn, s) }
	})
}

func TestSQLiteMigrations(t *testing.T) {
	storagetest.TestMigrations(t, func(t *testing.T) string {
		return "sqlite://" + filepath.Join(t.TempDir(), "vitrine.db")
	})
}

func TestSQLiteMemory(t *testing.T) {
	storagetest.TestDB(t, func(t *testing.T) *storage.DB { return openDB(t, "sqlite::memory:", nil) })
}

func TestPostgres(t *testing.T) {
	storagetest.PostgresDSN(t) // skips without a server
	runSQL(t, storagetest.PostgresDSN)
}

func TestMySQL(t *testing.T) {
	storagetest.MySQLDSN(t) // skips without a server
	runSQL(t, storagetest.MySQLDSN)
}

// runSQL runs the suite on a server database; fresh returns the DSN of a
// new empty schema or database.
func runSQL(t *testing.T, fresh func(t testing.TB) string) {
	t.Run("Migrations", func(t *testing.T) {
		storagetest.TestMigrations(t, func(t *testing.T) string { return fresh(t) })
	})
	storagetest.TestDBWithSecret(t,
		func(t *testing.T) *storage.DB { return openDB(t, fresh(t), nil) },
		func(t *testing.T, secret []byte) (*storage.DB, func([]byte) *storage.DB) {
			dsn := fresh(t)
			return openDB(t, dsn, secret), func(s []byte) *storage.DB { return openDB(t, dsn, s) }
		})
}

func sqliteOpener(dir string, secret []byte) func(t *testing.T) *storage.DB {
	return func(t *testing.T) *storage.DB {
		return openDB(t, "sqlite://"+filepath.Join(dir, storagetest.UniqueName(), "vitrine.db"), secret)
	}
}

func openDB(t *testing.T, dsn string, secret []byte) *storage.DB {
	t.Helper()
	db, err := storage.Open(context.Background(), dsn, storage.Options{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return db
}

func TestMigrationSteps(t *testing.T) {
	// Steps are numbered 1..N without gaps and every step has statements for
	// every dialect.
	for i, m := range storage.Migrations() {
		if m.Version != i+1 {
			t.Fatalf("step %d has version %d", i+1, m.Version)
		}
		for _, d := range []string{"sqlite", "postgres", "mysql"} {
			if len(m.Statements(d)) == 0 {
				t.Errorf("step %d (%s) has no %s statements", m.Version, m.Name, d)
			}
		}
	}
}

func TestOpenErrors(t *testing.T) {
	for _, dsn := range []string{"", "oracle://x", "sqlite://"} {
		if db, err := storage.Open(context.Background(), dsn, storage.Options{}); err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", dsn)
		}
	}
}

func TestSQLiteReopen(t *testing.T) {
	// Migrations are idempotent and data survives a reopen; relative paths
	// and missing parent directories work.
	t.Chdir(t.TempDir())
	dsn := "sqlite://data/sub/vitrine.db"
	db := openDB(t, dsn, nil)
	if _, err := db.PutKey(context.Background(), storage.Key{PublicKey: "p", PrivateKey: "s"}); err != nil {
		t.Fatal(err)
	}
	db2 := openDB(t, dsn, nil)
	k, err := db2.Key(context.Background(), "p")
	if err != nil || k.PrivateKey != "s" {
		t.Fatalf("Key after reopen = %+v, %v", k, err)
	}
	if _, err := os.Stat("data/sub/vitrine.db"); err != nil {
		t.Fatal(err)
	}
}
