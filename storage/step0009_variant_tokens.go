package storage

// Step 9 records in each variant row the blob token of the stored image it
// was rendered from, which names the variant's blob key (VariantKey), so
// that eviction and fsck find the blob from the row alone.
func init() {
	register(Migration{
		Version:  9,
		Name:     "variant blob tokens",
		SQLite:   []string{`ALTER TABLE variants ADD COLUMN blob_token TEXT NOT NULL DEFAULT ''`},
		Postgres: []string{`ALTER TABLE variants ADD COLUMN blob_token TEXT COLLATE "C" NOT NULL DEFAULT ''`},
		MySQL:    []string{`ALTER TABLE variants ADD COLUMN blob_token VARCHAR(64) NOT NULL DEFAULT ''`},
	})
}
