package storage

// Step 8 gives every image row the token of its own blob: an upload writes
// its bytes under a key no other upload uses (ImageKey), so a delete racing
// a re-upload of the same bytes can only ever remove the blob its row named.
// Rows from before have the empty token, which names the key images had
// then.
func init() {
	register(Migration{
		Version:  8,
		Name:     "image blob tokens",
		SQLite:   []string{`ALTER TABLE images ADD COLUMN blob_token TEXT NOT NULL DEFAULT ''`},
		Postgres: []string{`ALTER TABLE images ADD COLUMN blob_token TEXT COLLATE "C" NOT NULL DEFAULT ''`},
		MySQL:    []string{`ALTER TABLE images ADD COLUMN blob_token VARCHAR(64) NOT NULL DEFAULT ''`},
	})
}
