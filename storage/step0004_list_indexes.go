package storage

// Step 4 adds the indexes a listing needs: one user's page sorted by any
// sortable field reads the first rows of an index on (user_name, field,
// identifier) instead of sorting every image of the user. The sort on
// originalChecksum is COALESCE(original_checksum, empty string) (see query.go), an
// expression index on SQLite and PostgreSQL; MariaDB has no expression
// indexes and gets the plain column, all in one ALTER TABLE so that the
// step is one statement there.
func init() {
	// SQLite and PostgreSQL take the same statements.
	indexes := []string{
		`CREATE INDEX images_user_updated ON images (user_name, updated, identifier)`,
		`CREATE INDEX images_user_size ON images (user_name, size, identifier)`,
		`CREATE INDEX images_user_extension ON images (user_name, extension, identifier)`,
		`CREATE INDEX images_user_mime ON images (user_name, mime, identifier)`,
		`CREATE INDEX images_user_width ON images (user_name, width, identifier)`,
		`CREATE INDEX images_user_height ON images (user_name, height, identifier)`,
		`CREATE INDEX images_user_checksum ON images (user_name, checksum, identifier)`,
		`CREATE INDEX images_user_original_checksum ON images (user_name, COALESCE(original_checksum, ''), identifier)`,
	}
	register(Migration{
		Version:  4,
		Name:     "listing indexes",
		SQLite:   indexes,
		Postgres: indexes,
		MySQL: []string{
			`ALTER TABLE images
				ADD INDEX images_user_updated (user_name, updated, identifier),
				ADD INDEX images_user_size (user_name, size, identifier),
				ADD INDEX images_user_extension (user_name, extension, identifier),
				ADD INDEX images_user_mime (user_name, mime, identifier),
				ADD INDEX images_user_width (user_name, width, identifier),
				ADD INDEX images_user_height (user_name, height, identifier),
				ADD INDEX images_user_checksum (user_name, checksum, identifier),
				ADD INDEX images_user_original_checksum (user_name, original_checksum, identifier)`,
		},
	})
}
