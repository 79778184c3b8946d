package storage

// Step 18 adds what the events outbox fans out to (deliveries.go): the
// webhook subscriptions, one delivery row per event and sink (a webhook, a
// CDN purger) that any instance drains in order per sink and subject, and
// the log of every attempt. deliveries_sink_event makes a fan-out that
// runs twice (a crash between it and the event's delete) insert nothing
// the second time; deliveries_head serves the due query's "oldest pending
// row of its sink and subject".
func init() {
	register(Migration{
		Version: 18,
		Name:    "webhooks and deliveries",
		SQLite: []string{
			`CREATE TABLE webhooks (
				id TEXT PRIMARY KEY,
				url TEXT NOT NULL,
				events TEXT NOT NULL,
				users TEXT NOT NULL,
				secret TEXT NOT NULL,
				description TEXT NOT NULL,
				active BOOLEAN NOT NULL,
				failing_since BIGINT NOT NULL,
				created BIGINT NOT NULL,
				updated BIGINT NOT NULL)`,
			`CREATE TABLE deliveries (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				sink TEXT NOT NULL,
				event_id TEXT NOT NULL,
				type TEXT NOT NULL,
				subject TEXT NOT NULL,
				at BIGINT NOT NULL,
				data TEXT NOT NULL,
				created BIGINT NOT NULL,
				due BIGINT NOT NULL,
				attempts INTEGER NOT NULL,
				state INTEGER NOT NULL,
				finished BIGINT NOT NULL,
				last_status INTEGER NOT NULL,
				last_error TEXT NOT NULL)`,
			`CREATE UNIQUE INDEX deliveries_sink_event ON deliveries (sink, event_id)`,
			`CREATE INDEX deliveries_head ON deliveries (state, sink, subject, id)`,
			`CREATE INDEX deliveries_finished ON deliveries (state, finished)`,
			`CREATE TABLE delivery_attempts (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				delivery_id BIGINT NOT NULL,
				at BIGINT NOT NULL,
				status INTEGER NOT NULL,
				latency BIGINT NOT NULL,
				response TEXT NOT NULL,
				error TEXT NOT NULL)`,
			`CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id, id)`,
		},
		Postgres: []string{
			`CREATE TABLE webhooks (
				id TEXT COLLATE "C" PRIMARY KEY,
				url TEXT NOT NULL,
				events TEXT NOT NULL,
				users TEXT NOT NULL,
				secret TEXT NOT NULL,
				description TEXT NOT NULL,
				active BOOLEAN NOT NULL,
				failing_since BIGINT NOT NULL,
				created BIGINT NOT NULL,
				updated BIGINT NOT NULL)`,
			`CREATE TABLE deliveries (
				id BIGSERIAL PRIMARY KEY,
				sink TEXT COLLATE "C" NOT NULL,
				event_id TEXT COLLATE "C" NOT NULL,
				type TEXT COLLATE "C" NOT NULL,
				subject TEXT COLLATE "C" NOT NULL,
				at BIGINT NOT NULL,
				data TEXT NOT NULL,
				created BIGINT NOT NULL,
				due BIGINT NOT NULL,
				attempts INTEGER NOT NULL,
				state INTEGER NOT NULL,
				finished BIGINT NOT NULL,
				last_status INTEGER NOT NULL,
				last_error TEXT NOT NULL)`,
			`CREATE UNIQUE INDEX deliveries_sink_event ON deliveries (sink, event_id)`,
			`CREATE INDEX deliveries_head ON deliveries (state, sink, subject, id)`,
			`CREATE INDEX deliveries_finished ON deliveries (state, finished)`,
			`CREATE TABLE delivery_attempts (
				id BIGSERIAL PRIMARY KEY,
				delivery_id BIGINT NOT NULL,
				at BIGINT NOT NULL,
				status INTEGER NOT NULL,
				latency BIGINT NOT NULL,
				response TEXT NOT NULL,
				error TEXT NOT NULL)`,
			`CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id, id)`,
		},
		MySQL: []string{
			`CREATE TABLE webhooks (
				id VARCHAR(64) NOT NULL PRIMARY KEY,
				url TEXT NOT NULL,
				events TEXT NOT NULL,
				users TEXT NOT NULL,
				secret TEXT NOT NULL,
				description TEXT NOT NULL,
				active BOOLEAN NOT NULL,
				failing_since BIGINT NOT NULL,
				created BIGINT NOT NULL,
				updated BIGINT NOT NULL
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE deliveries (
				id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
				sink VARCHAR(128) NOT NULL,
				event_id VARCHAR(64) NOT NULL,
				type VARCHAR(128) NOT NULL,
				subject VARCHAR(600) NOT NULL,
				at BIGINT NOT NULL,
				data MEDIUMTEXT NOT NULL,
				created BIGINT NOT NULL,
				due BIGINT NOT NULL,
				attempts INTEGER NOT NULL,
				state INTEGER NOT NULL,
				finished BIGINT NOT NULL,
				last_status INTEGER NOT NULL,
				last_error TEXT NOT NULL,
				UNIQUE INDEX deliveries_sink_event (sink, event_id),
				INDEX deliveries_head (state, sink, subject, id),
				INDEX deliveries_finished (state, finished)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE delivery_attempts (
				id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
				delivery_id BIGINT NOT NULL,
				at BIGINT NOT NULL,
				status INTEGER NOT NULL,
				latency BIGINT NOT NULL,
				response TEXT NOT NULL,
				error TEXT NOT NULL,
				INDEX delivery_attempts_delivery (delivery_id, id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	})
}
