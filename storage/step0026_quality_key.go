package storage

// Step 26 adds to image_qualities the key of the target an answer was
// found under (quality.go): a relative target (high, the look of the
// image's own q80 JPEG) resolves to a score per image, so its answers are
// matched by the key that names its definition, and the answers stored
// before it, under high's former fixed score, are not taken for it.
func init() {
	register(Migration{
		Version:  26,
		Name:     "auto-quality target keys",
		SQLite:   []string{`ALTER TABLE image_qualities ADD COLUMN target_key TEXT NOT NULL DEFAULT ''`},
		Postgres: []string{`ALTER TABLE image_qualities ADD COLUMN target_key TEXT COLLATE "C" NOT NULL DEFAULT ''`},
		MySQL:    []string{`ALTER TABLE image_qualities ADD COLUMN target_key VARCHAR(64) NOT NULL DEFAULT ''`},
	})
}
