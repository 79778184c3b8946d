package storage

// Step 27 adds store_state, small named rows with an expiry that the
// instances of one store share (writepause.go): the write pause of
// `vitrine copy --cutover`, the mark of a store that was moved, the
// instances' heartbeats and their acknowledgements of a pause.
func init() {
	register(Migration{
		Version: 27,
		Name:    "store state",
		SQLite: []string{`CREATE TABLE store_state (
				name TEXT NOT NULL PRIMARY KEY,
				value TEXT NOT NULL,
				expires BIGINT NOT NULL)`},
		Postgres: []string{`CREATE TABLE store_state (
				name TEXT COLLATE "C" NOT NULL PRIMARY KEY,
				value TEXT NOT NULL,
				expires BIGINT NOT NULL)`},
		MySQL: []string{`CREATE TABLE store_state (
				name VARCHAR(255) NOT NULL PRIMARY KEY,
				value TEXT NOT NULL,
				expires BIGINT NOT NULL
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`},
	})
}
