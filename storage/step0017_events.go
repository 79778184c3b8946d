package storage

// Step 17 adds events, the outbox of changes for others to hear of
// (events.go): a row is written in the transaction of the change its
// audit entry records, and any instance drains the due rows in order per
// subject (DrainEvents), retrying failures with backoff. events_subject
// serves the due query's "no older row of the same subject" test.
func init() {
	register(Migration{
		Version: 17,
		Name:    "events outbox",
		SQLite: []string{
			`CREATE TABLE events (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				event_id TEXT NOT NULL,
				type TEXT NOT NULL,
				subject TEXT NOT NULL,
				at BIGINT NOT NULL,
				data TEXT NOT NULL,
				due BIGINT NOT NULL,
				attempts INTEGER NOT NULL,
				last_error TEXT NOT NULL)`,
			`CREATE INDEX events_due ON events (due)`,
			`CREATE INDEX events_subject ON events (subject, id)`,
		},
		Postgres: []string{
			`CREATE TABLE events (
				id BIGSERIAL PRIMARY KEY,
				event_id TEXT COLLATE "C" NOT NULL,
				type TEXT COLLATE "C" NOT NULL,
				subject TEXT COLLATE "C" NOT NULL,
				at BIGINT NOT NULL,
				data TEXT NOT NULL,
				due BIGINT NOT NULL,
				attempts INTEGER NOT NULL,
				last_error TEXT NOT NULL)`,
			`CREATE INDEX events_due ON events (due)`,
			`CREATE INDEX events_subject ON events (subject, id)`,
		},
		MySQL: []string{
			`CREATE TABLE events (
				id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
				event_id VARCHAR(64) NOT NULL,
				type VARCHAR(128) NOT NULL,
				subject VARCHAR(600) NOT NULL,
				at BIGINT NOT NULL,
				data MEDIUMTEXT NOT NULL,
				due BIGINT NOT NULL,
				attempts INTEGER NOT NULL,
				last_error TEXT NOT NULL,
				INDEX events_due (due),
				INDEX events_subject (subject, id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	})
}
