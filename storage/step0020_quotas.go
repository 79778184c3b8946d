package storage

// Step 20 adds quotas: one row per user whose quotas differ from the
// configured defaults (SetQuota), each column NULL where the default holds.
// What a user has stored is image_counts (step 6): it is written in the
// transaction of every image added or deleted, and every image stored
// before it was counted by step 6, so the quotas are checked against it as
// it stands and this step fills nothing. `vitrine fsck` recounts it.
func init() {
	register(Migration{
		Version: 20,
		Name:    "per-user quotas",
		SQLite: []string{
			`CREATE TABLE quotas (
				user_name TEXT NOT NULL PRIMARY KEY,
				images BIGINT,
				bytes BIGINT,
				variants_per_image BIGINT,
				updated BIGINT NOT NULL)`,
		},
		Postgres: []string{
			`CREATE TABLE quotas (
				user_name TEXT COLLATE "C" NOT NULL PRIMARY KEY,
				images BIGINT,
				bytes BIGINT,
				variants_per_image BIGINT,
				updated BIGINT NOT NULL)`,
		},
		MySQL: []string{
			`CREATE TABLE quotas (
				user_name VARCHAR(255) NOT NULL PRIMARY KEY,
				images BIGINT,
				bytes BIGINT,
				variants_per_image BIGINT,
				updated BIGINT NOT NULL
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	})
}
