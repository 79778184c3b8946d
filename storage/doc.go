// Package storage persists vitrine's data: image records, metadata, short
// URLs, public keys, resource groups and access rules in SQL through bun
// (SQLite, PostgreSQL, MySQL/MariaDB), and image bytes through gocloud.dev
// blob buckets (file, mem, s3). The conformance suites in storagetest are run
// by every backend.
//
// # Schema migrations
//
// The schema is a list of numbered steps (Migration), applied in order by
// Open (unless Options.SkipMigrate) and by `vitrine migrate`, and recorded
// in the schema_migrations table. Several instances starting at once on one
// database apply each step exactly once: they serialize on a lock
// (PostgreSQL pg_advisory_lock, MySQL GET_LOCK, SQLite's write lock taken by
// BEGIN IMMEDIATE). A database whose last step is newer than this binary
// knows is refused with ErrSchemaTooNew. A database made before versioned
// migrations (the tables of step 1 and no schema_migrations) is recorded as
// being at step 1.
//
// Steps in use: 1 initial schema (schema.go), 2 image version counter, 3
// variant cache table, 4 listing indexes, 5 admin UI sessions, 6 per-user
// image counts and descending listing indexes. To add step N, add one file,
// stepNNNN_what.go, that registers it:
//
//	func init() {
//		register(Migration{
//			Version:  7,
//			Name:     "tags",
//			SQLite:   []string{`CREATE TABLE tags (...)`},
//			Postgres: []string{`CREATE TABLE tags (...)`},
//			MySQL:    []string{`CREATE TABLE tags (...) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`},
//		})
//	}
//
// Rules for a step: never edit a step that has been released, add one; take
// the next free number (a duplicate panics at init and a gap fails
// TestMigrationSteps); give every dialect its statements; use the column
// conventions of step 1 (times as BIGINT unix microseconds, "C" collation
// on PostgreSQL, utf8mb4_bin and VARCHAR(255) keys on MySQL). On SQLite and
// PostgreSQL a step's statements and its schema_migrations row commit in one
// transaction. MySQL commits every DDL statement on its own, so there a step
// that fails half-way leaves its first statements applied: prefer one
// statement per MySQL step (one ALTER TABLE can add several columns and
// indexes). The storagetest migration suite runs every step on every
// dialect, from an empty database and from step 1.
package storage
