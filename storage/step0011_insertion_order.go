package storage

// Step 11 records when each image row was inserted, in microseconds
// (images.inserted), so that images added within the same second (added is
// whole seconds) still list newest first in the order they arrived rather
// than by identifier. Rows from before this step take their added time, and
// ties among them fall back to the identifier as before. The indexes on
// added gain the column, so a listing by added still reads an index.
func init() {
	stmts := []string{
		`ALTER TABLE images ADD COLUMN inserted BIGINT NOT NULL DEFAULT 0`,
		`UPDATE images SET inserted = added`,
		`CREATE INDEX images_user_added_inserted ON images (user_name, added, inserted)`,
		`CREATE INDEX images_added_inserted ON images (added, inserted)`,
		`DROP INDEX images_user_added`,
		`DROP INDEX images_added`,
	}
	register(Migration{
		Version:  11,
		Name:     "image insertion order",
		SQLite:   stmts,
		Postgres: stmts,
		MySQL: []string{
			`ALTER TABLE images ADD COLUMN inserted BIGINT NOT NULL DEFAULT 0`,
			`UPDATE images SET inserted = added`,
			`ALTER TABLE images
				ADD INDEX images_user_added_inserted (user_name, added, inserted),
				ADD INDEX images_added_inserted (added, inserted),
				DROP INDEX images_user_added,
				DROP INDEX images_added`,
		},
	})
}
