package storage

// Step 6 makes one user's listing cheap however many images the user has:
// image_counts keeps each user's image count and total size (InsertImage and
// DeleteImage maintain it in their transactions), so the hit count of a
// listing filtered by user only is one row read instead of counting every
// image; and descending indexes serve descending sorts on the fields with
// few distinct values (extension, mime, width, height, originalChecksum),
// where the ascending indexes of step 4 would leave large groups of equal
// values to sort, because the tie-break on identifier stays ascending.
func init() {
	// SQLite and PostgreSQL take the same indexes.
	indexes := []string{
		`CREATE INDEX images_user_extension_desc ON images (user_name, extension DESC, identifier)`,
		`CREATE INDEX images_user_mime_desc ON images (user_name, mime DESC, identifier)`,
		`CREATE INDEX images_user_width_desc ON images (user_name, width DESC, identifier)`,
		`CREATE INDEX images_user_height_desc ON images (user_name, height DESC, identifier)`,
		`CREATE INDEX images_user_original_checksum_desc ON images (user_name, COALESCE(original_checksum, '') DESC, identifier)`,
	}
	register(Migration{
		Version: 6,
		Name:    "per-user image counts and descending listing indexes",
		SQLite: append([]string{
			`CREATE TABLE image_counts (
				user_name TEXT NOT NULL PRIMARY KEY,
				images BIGINT NOT NULL,
				bytes BIGINT NOT NULL)`,
			`INSERT INTO image_counts (user_name, images, bytes) SELECT user_name, COUNT(*), COALESCE(SUM(size), 0) FROM images GROUP BY user_name`,
		}, indexes...),
		Postgres: append([]string{
			`CREATE TABLE image_counts (
				user_name TEXT COLLATE "C" NOT NULL PRIMARY KEY,
				images BIGINT NOT NULL,
				bytes BIGINT NOT NULL)`,
			`INSERT INTO image_counts (user_name, images, bytes) SELECT user_name, COUNT(*), COALESCE(SUM(size), 0) FROM images GROUP BY user_name`,
		}, indexes...),
		MySQL: []string{
			`CREATE TABLE image_counts (
				user_name VARCHAR(255) NOT NULL PRIMARY KEY,
				images BIGINT NOT NULL,
				bytes BIGINT NOT NULL
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`INSERT INTO image_counts (user_name, images, bytes) SELECT user_name, COUNT(*), COALESCE(SUM(size), 0) FROM images GROUP BY user_name`,
			`ALTER TABLE images
				ADD INDEX images_user_extension_desc (user_name, extension DESC, identifier),
				ADD INDEX images_user_mime_desc (user_name, mime DESC, identifier),
				ADD INDEX images_user_width_desc (user_name, width DESC, identifier),
				ADD INDEX images_user_height_desc (user_name, height DESC, identifier),
				ADD INDEX images_user_original_checksum_desc (user_name, original_checksum DESC, identifier)`,
		},
	})
}
