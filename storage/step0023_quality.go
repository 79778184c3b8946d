package storage

// Step 23 adds image_qualities (quality.go): the auto-quality answers of
// an image, one row per output format and size class, deleted with it.
func init() {
	register(Migration{
		Version: 23,
		Name:    "auto-quality answers",
		SQLite: []string{
			`CREATE TABLE image_qualities (
				user_name TEXT NOT NULL,
				identifier TEXT NOT NULL,
				format TEXT NOT NULL,
				size_class INTEGER NOT NULL,
				target DOUBLE PRECISION NOT NULL,
				quality INTEGER NOT NULL,
				score DOUBLE PRECISION NOT NULL,
				bytes BIGINT NOT NULL,
				updated BIGINT NOT NULL,
				PRIMARY KEY (user_name, identifier, format, size_class),
				FOREIGN KEY (user_name, identifier) REFERENCES images (user_name, identifier) ON DELETE CASCADE)`,
		},
		Postgres: []string{
			`CREATE TABLE image_qualities (
				user_name TEXT COLLATE "C" NOT NULL,
				identifier TEXT COLLATE "C" NOT NULL,
				format TEXT COLLATE "C" NOT NULL,
				size_class INTEGER NOT NULL,
				target DOUBLE PRECISION NOT NULL,
				quality INTEGER NOT NULL,
				score DOUBLE PRECISION NOT NULL,
				bytes BIGINT NOT NULL,
				updated BIGINT NOT NULL,
				PRIMARY KEY (user_name, identifier, format, size_class),
				FOREIGN KEY (user_name, identifier) REFERENCES images (user_name, identifier) ON DELETE CASCADE)`,
		},
		MySQL: []string{
			`CREATE TABLE image_qualities (
				user_name VARCHAR(255) NOT NULL,
				identifier VARCHAR(255) NOT NULL,
				format VARCHAR(16) NOT NULL,
				size_class INTEGER NOT NULL,
				target DOUBLE NOT NULL,
				quality INTEGER NOT NULL,
				score DOUBLE NOT NULL,
				bytes BIGINT NOT NULL,
				updated BIGINT NOT NULL,
				PRIMARY KEY (user_name, identifier, format, size_class),
				FOREIGN KEY (user_name, identifier) REFERENCES images (user_name, identifier) ON DELETE CASCADE
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	})
}
