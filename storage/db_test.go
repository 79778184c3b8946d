package storage_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"vitrine/storage"
	"vitrine/storage/storagetest"
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
	base := os.Getenv("VITRINE_TEST_POSTGRES")
	if base == "" {
		t.Skip("set VITRINE_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run")
	}
	// Each open gets its own schema, selected with search_path.
	fresh := func(t *testing.T) string {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Close() })
		schema := uniqueName()
		if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
				t.Errorf("drop schema: %v", err)
			}
		})
		return withParam(base, "search_path", schema)
	}
	runSQL(t, fresh)
}

func TestMySQL(t *testing.T) {
	base := os.Getenv("VITRINE_TEST_MYSQL")
	if base == "" {
		t.Skip("set VITRINE_TEST_MYSQL=mysql://root@127.0.0.1:3306/test to run")
	}
	// Each open gets its own database.
	fresh := func(t *testing.T) string {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		cfg := mysql.NewConfig()
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net, cfg.Addr = "tcp", u.Host
		admin, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Close() })
		name := uniqueName()
		if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := admin.Exec("DROP DATABASE " + name); err != nil {
				t.Errorf("drop database: %v", err)
			}
		})
		u.Path = "/" + name
		return u.String()
	}
	runSQL(t, fresh)
}

// runSQL runs the suite on a server database; fresh returns the DSN of a
// new empty schema or database.
func runSQL(t *testing.T, fresh func(t *testing.T) string) {
	t.Run("Migrations", func(t *testing.T) { storagetest.TestMigrations(t, fresh) })
	storagetest.TestDBWithSecret(t,
		func(t *testing.T) *storage.DB { return openDB(t, fresh(t), nil) },
		func(t *testing.T, secret []byte) (*storage.DB, func([]byte) *storage.DB) {
			dsn := fresh(t)
			return openDB(t, dsn, secret), func(s []byte) *storage.DB { return openDB(t, dsn, s) }
		})
}

func sqliteOpener(dir string, secret []byte) func(t *testing.T) *storage.DB {
	return func(t *testing.T) *storage.DB {
		return openDB(t, "sqlite://"+filepath.Join(dir, uniqueName(), "vitrine.db"), secret)
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

func uniqueName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "vt_" + hex.EncodeToString(b)
}

func withParam(dsn, k, v string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + url.QueryEscape(k) + "=" + url.QueryEscape(v)
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
