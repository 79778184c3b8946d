package storage

// Step 3 adds the variants table: one row per cached transformed variant in
// the blob store, with its size and last use, so that every instance sees
// the same total and evicts the least recently used variants first.
func init() {
	register(Migration{
		Version: 3,
		Name:    "variant cache index",
		SQLite: []string{
			`CREATE TABLE variants (
				user_name TEXT NOT NULL,
				identifier TEXT NOT NULL,
				hash TEXT NOT NULL,
				size BIGINT NOT NULL,
				created BIGINT NOT NULL,
				last_used BIGINT NOT NULL,
				PRIMARY KEY (user_name, identifier, hash))`,
			`CREATE INDEX variants_last_used ON variants (last_used)`,
		},
		Postgres: []string{
			`CREATE TABLE variants (
				user_name TEXT COLLATE "C" NOT NULL,
				identifier TEXT COLLATE "C" NOT NULL,
				hash TEXT COLLATE "C" NOT NULL,
				size BIGINT NOT NULL,
				created BIGINT NOT NULL,
				last_used BIGINT NOT NULL,
				PRIMARY KEY (user_name, identifier, hash))`,
			`CREATE INDEX variants_last_used ON variants (last_used)`,
		},
		MySQL: []string{
			`CREATE TABLE variants (
				user_name VARCHAR(255) NOT NULL,
				identifier VARCHAR(255) NOT NULL,
				hash VARCHAR(128) NOT NULL,
				size BIGINT NOT NULL,
				created BIGINT NOT NULL,
				last_used BIGINT NOT NULL,
				PRIMARY KEY (user_name, identifier, hash),
				INDEX variants_last_used (last_used)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	})
}
