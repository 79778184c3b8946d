package storage

// Step 15 adds variations: one row per stored variation (a downscaled
// working copy of an image, variations.go), naming its blob, so that the
// picker knows which exist and DeleteImage finds them.
func init() {
	register(Migration{
		Version: 15,
		Name:    "stored variations",
		SQLite: []string{
			`CREATE TABLE variations (
				user_name TEXT NOT NULL,
				identifier TEXT NOT NULL,
				width INTEGER NOT NULL,
				height INTEGER NOT NULL,
				orig_width INTEGER NOT NULL,
				orig_height INTEGER NOT NULL,
				ext TEXT NOT NULL,
				size BIGINT NOT NULL,
				blob_token TEXT NOT NULL,
				created BIGINT NOT NULL,
				PRIMARY KEY (user_name, identifier, width))`,
		},
		Postgres: []string{
			`CREATE TABLE variations (
				user_name TEXT COLLATE "C" NOT NULL,
				identifier TEXT COLLATE "C" NOT NULL,
				width INTEGER NOT NULL,
				height INTEGER NOT NULL,
				orig_width INTEGER NOT NULL,
				orig_height INTEGER NOT NULL,
				ext TEXT NOT NULL,
				size BIGINT NOT NULL,
				blob_token TEXT COLLATE "C" NOT NULL,
				created BIGINT NOT NULL,
				PRIMARY KEY (user_name, identifier, width))`,
		},
		MySQL: []string{
			`CREATE TABLE variations (
				user_name VARCHAR(255) NOT NULL,
				identifier VARCHAR(255) NOT NULL,
				width INTEGER NOT NULL,
				height INTEGER NOT NULL,
				orig_width INTEGER NOT NULL,
				orig_height INTEGER NOT NULL,
				ext VARCHAR(16) NOT NULL,
				size BIGINT NOT NULL,
				blob_token VARCHAR(64) NOT NULL,
				created BIGINT NOT NULL,
				PRIMARY KEY (user_name, identifier, width)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	})
}
