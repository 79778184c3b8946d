package storage

// Step 2 gives every image a version that changes whenever its metadata
// changes, so cached variants are keyed by it instead of by the Updated time,
// which has whole-second resolution: two changes in one second must never
// serve a stale variant. New rows start at their insertion time in
// microseconds (so an image deleted and uploaded again does not reuse the
// versions of its first life) and each change adds one.
func init() {
	stmts := []string{
		`ALTER TABLE images ADD COLUMN version BIGINT NOT NULL DEFAULT 0`,
		`UPDATE images SET version = updated`,
	}
	register(Migration{Version: 2, Name: "image version counter", SQLite: stmts, Postgres: stmts, MySQL: stmts})
}
