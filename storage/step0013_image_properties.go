package storage

// Step 13 adds image_properties: what analysis learns about an image once
// (BlurHash, ThumbHash, average colour, palette, perceptual hash), one row
// per analysed image, deleted with it. The perceptual hash is a signed
// BIGINT (the 64 bits as stored by Go's int64) indexed per user with the
// identifier, so that a similar-image search reads one user's hashes from
// the index alone.
func init() {
	register(Migration{
		Version: 13,
		Name:    "image properties (analysis) with perceptual hash index",
		SQLite: []string{
			`CREATE TABLE image_properties (
				user_name TEXT NOT NULL,
				identifier TEXT NOT NULL,
				blurhash TEXT NOT NULL,
				thumbhash TEXT NOT NULL,
				average_color TEXT NOT NULL,
				palette TEXT NOT NULL,
				phash BIGINT,
				analyzed BIGINT NOT NULL,
				PRIMARY KEY (user_name, identifier),
				FOREIGN KEY (user_name, identifier) REFERENCES images (user_name, identifier) ON DELETE CASCADE)`,
			`CREATE INDEX image_properties_phash ON image_properties (user_name, phash, identifier)`,
		},
		Postgres: []string{
			`CREATE TABLE image_properties (
				user_name TEXT COLLATE "C" NOT NULL,
				identifier TEXT COLLATE "C" NOT NULL,
				blurhash TEXT NOT NULL,
				thumbhash TEXT NOT NULL,
				average_color TEXT NOT NULL,
				palette TEXT NOT NULL,
				phash BIGINT,
				analyzed BIGINT NOT NULL,
				PRIMARY KEY (user_name, identifier),
				FOREIGN KEY (user_name, identifier) REFERENCES images (user_name, identifier) ON DELETE CASCADE)`,
			`CREATE INDEX image_properties_phash ON image_properties (user_name, phash, identifier)`,
		},
		MySQL: []string{
			`CREATE TABLE image_properties (
				user_name VARCHAR(255) NOT NULL,
				identifier VARCHAR(255) NOT NULL,
				blurhash VARCHAR(255) NOT NULL,
				thumbhash VARCHAR(255) NOT NULL,
				average_color VARCHAR(16) NOT NULL,
				palette VARCHAR(1024) NOT NULL,
				phash BIGINT NULL,
				analyzed BIGINT NOT NULL,
				PRIMARY KEY (user_name, identifier),
				INDEX image_properties_phash (user_name, phash, identifier),
				FOREIGN KEY (user_name, identifier) REFERENCES images (user_name, identifier) ON DELETE CASCADE
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	})
}
