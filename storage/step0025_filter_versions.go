package storage

// Step 25 adds the filters deployed through the API (filterversions.go):
// filter_versions, a row per uploaded version whose bundle is the blob
// filters/<version>; filter_set, the one row holding the active set that
// every instance polls; filter_instances, what each instance loaded, with
// its heartbeat.
func init() {
	register(Migration{
		Version: 25,
		Name:    "filters deployed through the API",
		SQLite: []string{
			`CREATE TABLE filter_versions (
				name TEXT NOT NULL,
				version TEXT NOT NULL,
				manifest TEXT NOT NULL,
				size BIGINT NOT NULL,
				created BIGINT NOT NULL,
				actor TEXT NOT NULL,
				PRIMARY KEY (name, version))`,
			`CREATE TABLE filter_set (
				id INTEGER NOT NULL PRIMARY KEY,
				revision BIGINT NOT NULL,
				active TEXT NOT NULL,
				updated BIGINT NOT NULL)`,
			`INSERT INTO filter_set (id, revision, active, updated) VALUES (1, 0, '{}', 0)`,
			`CREATE TABLE filter_instances (
				instance TEXT NOT NULL PRIMARY KEY,
				loaded TEXT NOT NULL,
				heartbeat BIGINT NOT NULL)`,
		},
		Postgres: []string{
			`CREATE TABLE filter_versions (
				name TEXT COLLATE "C" NOT NULL,
				version TEXT COLLATE "C" NOT NULL,
				manifest TEXT NOT NULL,
				size BIGINT NOT NULL,
				created BIGINT NOT NULL,
				actor TEXT NOT NULL,
				PRIMARY KEY (name, version))`,
			`CREATE TABLE filter_set (
				id INTEGER NOT NULL PRIMARY KEY,
				revision BIGINT NOT NULL,
				active TEXT NOT NULL,
				updated BIGINT NOT NULL)`,
			`INSERT INTO filter_set (id, revision, active, updated) VALUES (1, 0, '{}', 0)`,
			`CREATE TABLE filter_instances (
				instance TEXT COLLATE "C" NOT NULL PRIMARY KEY,
				loaded TEXT NOT NULL,
				heartbeat BIGINT NOT NULL)`,
		},
		MySQL: []string{
			`CREATE TABLE filter_versions (
				name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
				version CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
				manifest MEDIUMTEXT NOT NULL,
				size BIGINT NOT NULL,
				created BIGINT NOT NULL,
				actor VARCHAR(255) NOT NULL,
				PRIMARY KEY (name, version)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE filter_set (
				id INTEGER NOT NULL PRIMARY KEY,
				revision BIGINT NOT NULL,
				active MEDIUMTEXT NOT NULL,
				updated BIGINT NOT NULL
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`INSERT INTO filter_set (id, revision, active, updated) VALUES (1, 0, '{}', 0)`,
			`CREATE TABLE filter_instances (
				instance VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
				loaded MEDIUMTEXT NOT NULL,
				heartbeat BIGINT NOT NULL
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	})
}
