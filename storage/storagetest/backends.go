package storagetest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// The server backends come from the environment; a test that needs one
// that is not set skips, naming the variable.
const (
	envPostgres = "VITRINE_TEST_POSTGRES"
	envMySQL    = "VITRINE_TEST_MYSQL"
	envS3       = "VITRINE_TEST_S3"
)

// UniqueName is a fresh lower-case name for a schema, database or key
// prefix.
func UniqueName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "vt_" + hex.EncodeToString(b)
}

// PostgresDSN returns the DSN of a fresh schema on the VITRINE_TEST_POSTGRES
// server (selected with search_path; dropped when the test ends), or skips.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(envPostgres)
	if base == "" {
		t.Skip("set " + envPostgres + "=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	schema := UniqueName()
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema on %s: %v", envPostgres, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return WithParam(base, "search_path", schema)
}

// MySQLDSN returns the DSN of a fresh database on the VITRINE_TEST_MYSQL
// server (dropped when the test ends), or skips.
func MySQLDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(envMySQL)
	if base == "" {
		t.Skip("set " + envMySQL + "=mysql://root@127.0.0.1:3306/test to run")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	cfg := mysql.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.Net, cfg.Addr = "tcp", u.Host
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	name := UniqueName()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database on %s: %v", envMySQL, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE " + name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// S3URL returns the VITRINE_TEST_S3 bucket URL with a fresh key prefix, or
// skips.
func S3URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(envS3)
	if u == "" {
		t.Skip("set " + envS3 + "='s3://bucket?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true' " +
			"(and AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) to run")
	}
	return WithParam(u, "prefix", UniqueName()+"/")
}

// WithParam adds a query parameter to a URL-shaped DSN.
func WithParam(dsn, k, v string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + url.QueryEscape(k) + "=" + url.QueryEscape(v)
}
