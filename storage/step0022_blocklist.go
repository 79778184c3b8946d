package storage

// Step 22 adds the takedown blocklist (blocklist.go): entries that block
// an upload by its MD5 checksum or by its perceptual hash within a
// distance, across every user. A checksum or a hash is blocked by one
// entry at most (the unique indexes; NULL, the other kind's column, is
// never equal to NULL); blocklist_phash also serves the read of every
// hash entry an upload is checked against.
func init() {
	register(Migration{
		Version: 22,
		Name:    "blocklist",
		SQLite: []string{
			`CREATE TABLE blocklist (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				checksum TEXT,
				phash BIGINT,
				distance INTEGER NOT NULL,
				reason TEXT NOT NULL,
				actor TEXT NOT NULL,
				created BIGINT NOT NULL)`,
			`CREATE UNIQUE INDEX blocklist_checksum ON blocklist (checksum)`,
			`CREATE UNIQUE INDEX blocklist_phash ON blocklist (phash)`,
		},
		Postgres: []string{
			`CREATE TABLE blocklist (
				id BIGSERIAL PRIMARY KEY,
				checksum TEXT COLLATE "C",
				phash BIGINT,
				distance INTEGER NOT NULL,
				reason TEXT NOT NULL,
				actor TEXT NOT NULL,
				created BIGINT NOT NULL)`,
			`CREATE UNIQUE INDEX blocklist_checksum ON blocklist (checksum)`,
			`CREATE UNIQUE INDEX blocklist_phash ON blocklist (phash)`,
		},
		MySQL: []string{
			`CREATE TABLE blocklist (
				id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
				checksum VARCHAR(32) NULL,
				phash BIGINT NULL,
				distance INTEGER NOT NULL,
				reason TEXT NOT NULL,
				actor VARCHAR(255) NOT NULL,
				created BIGINT NOT NULL,
				UNIQUE INDEX blocklist_checksum (checksum),
				UNIQUE INDEX blocklist_phash (phash)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	})
}
