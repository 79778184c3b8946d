package storage

// Step 16 records in each variant row the transformation chain and the
// output format it was rendered with, so that a listing can show what made
// each variant (its hash cannot be read back). Rows cached before this step
// keep empty values.
func init() {
	register(Migration{
		Version: 16,
		Name:    "variant chains",
		SQLite: []string{
			`ALTER TABLE variants ADD COLUMN chain TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE variants ADD COLUMN format TEXT NOT NULL DEFAULT ''`,
		},
		Postgres: []string{
			`ALTER TABLE variants ADD COLUMN chain TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE variants ADD COLUMN format TEXT NOT NULL DEFAULT ''`,
		},
		MySQL: []string{
			`ALTER TABLE variants ADD COLUMN chain TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE variants ADD COLUMN format VARCHAR(16) NOT NULL DEFAULT ''`,
		},
	})
}
