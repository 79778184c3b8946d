package storage

// Step 24 keeps, with each event and delivery, the W3C traceparent of the
// change that wrote it (events.go), so that the bus messages and webhook
// deliveries sent later, from any instance, continue the change's trace.
func init() {
	register(Migration{
		Version: 24,
		Name:    "events' trace context",
		SQLite: []string{
			`ALTER TABLE events ADD COLUMN traceparent TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE deliveries ADD COLUMN traceparent TEXT NOT NULL DEFAULT ''`,
		},
		Postgres: []string{
			`ALTER TABLE events ADD COLUMN traceparent TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE deliveries ADD COLUMN traceparent TEXT NOT NULL DEFAULT ''`,
		},
		MySQL: []string{
			`ALTER TABLE events ADD COLUMN traceparent VARCHAR(64) NOT NULL DEFAULT ''`,
			`ALTER TABLE deliveries ADD COLUMN traceparent VARCHAR(64) NOT NULL DEFAULT ''`,
		},
	})
}
