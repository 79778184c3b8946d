package storage

// Step 14 adds variation_jobs, the durable list of images whose stored
// variations (variations.go) are still to be built: a row is written in the
// transaction that commits the image, and any instance drains the due rows
// (DrainVariationJobs), retrying failures with backoff.
func init() {
	register(Migration{
		Version: 14,
		Name:    "variation jobs",
		SQLite: []string{
			`CREATE TABLE variation_jobs (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				user_name TEXT NOT NULL,
				identifier TEXT NOT NULL,
				due BIGINT NOT NULL,
				attempts INTEGER NOT NULL,
				last_error TEXT NOT NULL,
				created BIGINT NOT NULL)`,
			`CREATE INDEX variation_jobs_due ON variation_jobs (due)`,
		},
		Postgres: []string{
			`CREATE TABLE variation_jobs (
				id BIGSERIAL PRIMARY KEY,
				user_name TEXT COLLATE "C" NOT NULL,
				identifier TEXT COLLATE "C" NOT NULL,
				due BIGINT NOT NULL,
				attempts INTEGER NOT NULL,
				last_error TEXT NOT NULL,
				created BIGINT NOT NULL)`,
			`CREATE INDEX variation_jobs_due ON variation_jobs (due)`,
		},
		MySQL: []string{
			`CREATE TABLE variation_jobs (
				id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
				user_name VARCHAR(255) NOT NULL,
				identifier VARCHAR(255) NOT NULL,
				due BIGINT NOT NULL,
				attempts INTEGER NOT NULL,
				last_error TEXT NOT NULL,
				created BIGINT NOT NULL,
				INDEX variation_jobs_due (due)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	})
}
