package storage

// Step 5 adds the admin UI's sessions (sessions.go).
func init() {
	register(Migration{Version: 5, Name: "admin UI sessions",
		SQLite: []string{`CREATE TABLE admin_sessions (
		id_hash TEXT NOT NULL PRIMARY KEY,
		public_key TEXT NOT NULL,
		private_key TEXT NOT NULL,
		csrf TEXT NOT NULL,
		created BIGINT NOT NULL,
		seen BIGINT NOT NULL)`},
		Postgres: []string{`CREATE TABLE admin_sessions (
		id_hash TEXT COLLATE "C" NOT NULL PRIMARY KEY,
		public_key TEXT COLLATE "C" NOT NULL,
		private_key TEXT NOT NULL,
		csrf TEXT NOT NULL,
		created BIGINT NOT NULL,
		seen BIGINT NOT NULL)`},
		MySQL: []string{`CREATE TABLE admin_sessions (
		id_hash CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
		public_key VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
		private_key TEXT NOT NULL,
		csrf CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
		created BIGINT NOT NULL,
		seen BIGINT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`},
	})
}
