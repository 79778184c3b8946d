package storage

// Step 7 adds blob_queue, the durable list of blobs to delete (queue.go):
// a row is written in the same transaction that stops a blob from being
// needed (an image or variant row deleted), or before a blob is written
// (a reservation, claimed by the transaction that commits the row naming
// it), and every instance drains the rows that are due.
func init() {
	register(Migration{
		Version: 7,
		Name:    "blob deletion queue",
		SQLite: []string{
			`CREATE TABLE blob_queue (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				blob_key TEXT NOT NULL,
				prefix SMALLINT NOT NULL,
				due BIGINT NOT NULL,
				attempts INTEGER NOT NULL,
				last_error TEXT NOT NULL,
				created BIGINT NOT NULL)`,
			`CREATE INDEX blob_queue_due ON blob_queue (due)`,
			`CREATE INDEX blob_queue_key ON blob_queue (blob_key)`,
		},
		Postgres: []string{
			`CREATE TABLE blob_queue (
				id BIGSERIAL PRIMARY KEY,
				blob_key TEXT COLLATE "C" NOT NULL,
				prefix SMALLINT NOT NULL,
				due BIGINT NOT NULL,
				attempts INTEGER NOT NULL,
				last_error TEXT NOT NULL,
				created BIGINT NOT NULL)`,
			`CREATE INDEX blob_queue_due ON blob_queue (due)`,
			`CREATE INDEX blob_queue_key ON blob_queue (blob_key)`,
		},
		MySQL: []string{
			`CREATE TABLE blob_queue (
				id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
				blob_key VARCHAR(700) NOT NULL,
				prefix SMALLINT NOT NULL,
				due BIGINT NOT NULL,
				attempts INTEGER NOT NULL,
				last_error TEXT NOT NULL,
				created BIGINT NOT NULL,
				INDEX blob_queue_due (due),
				INDEX blob_queue_key (blob_key)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	})
}
