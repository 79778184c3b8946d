package storage

// Step 19 adds upload_tokens (uploadtokens.go): tokens that let a browser
// upload for one user without a private key. A row holds the token's
// policy and what is left of it; the token itself is never stored, only
// its SHA-256 (hash), by which a request finds the row. expires serves the
// purge of old tokens.
func init() {
	register(Migration{
		Version: 19,
		Name:    "upload tokens",
		SQLite: []string{
			`CREATE TABLE upload_tokens (
				id TEXT NOT NULL PRIMARY KEY,
				hash TEXT NOT NULL UNIQUE,
				user_name TEXT NOT NULL,
				public_key TEXT NOT NULL,
				uses INTEGER NOT NULL,
				uses_left INTEGER NOT NULL,
				max_bytes BIGINT NOT NULL,
				max_pixels BIGINT NOT NULL,
				formats TEXT NOT NULL,
				metadata TEXT NOT NULL,
				origin TEXT NOT NULL,
				created BIGINT NOT NULL,
				expires BIGINT NOT NULL,
				revoked BIGINT NOT NULL)`,
			`CREATE INDEX upload_tokens_expires ON upload_tokens (expires)`,
		},
		Postgres: []string{
			`CREATE TABLE upload_tokens (
				id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
				hash TEXT COLLATE "C" NOT NULL UNIQUE,
				user_name TEXT COLLATE "C" NOT NULL,
				public_key TEXT COLLATE "C" NOT NULL,
				uses INTEGER NOT NULL,
				uses_left INTEGER NOT NULL,
				max_bytes BIGINT NOT NULL,
				max_pixels BIGINT NOT NULL,
				formats TEXT NOT NULL,
				metadata TEXT NOT NULL,
				origin TEXT NOT NULL,
				created BIGINT NOT NULL,
				expires BIGINT NOT NULL,
				revoked BIGINT NOT NULL)`,
			`CREATE INDEX upload_tokens_expires ON upload_tokens (expires)`,
		},
		MySQL: []string{
			`CREATE TABLE upload_tokens (
				id VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
				hash CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
				user_name VARCHAR(255) NOT NULL,
				public_key VARCHAR(255) NOT NULL,
				uses INTEGER NOT NULL,
				uses_left INTEGER NOT NULL,
				max_bytes BIGINT NOT NULL,
				max_pixels BIGINT NOT NULL,
				formats VARCHAR(255) NOT NULL,
				metadata MEDIUMTEXT NOT NULL,
				origin VARCHAR(255) NOT NULL,
				created BIGINT NOT NULL,
				expires BIGINT NOT NULL,
				revoked BIGINT NOT NULL,
				UNIQUE INDEX upload_tokens_hash (hash),
				INDEX upload_tokens_expires (expires)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	})
}
