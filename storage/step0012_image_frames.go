package storage

// Step 11 records the number of frames of each image (1 for a still image,
// more for an animation) as read at upload. Rows from before this step
// have 0: not known.
func init() {
	stmts := []string{`ALTER TABLE images ADD COLUMN frames INTEGER NOT NULL DEFAULT 0`}
	register(Migration{Version: 12, Name: "image frames", SQLite: stmts, Postgres: stmts, MySQL: stmts})
}
