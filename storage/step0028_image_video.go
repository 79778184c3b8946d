package storage

// Step 28 records what a video's header says (Image.Video): its duration,
// frame rate and codec, NULL for an image.
func init() {
	stmts := func(float, text string) []string {
		return []string{
			`ALTER TABLE images ADD COLUMN video_duration ` + float + ` NULL`,
			`ALTER TABLE images ADD COLUMN video_fps ` + float + ` NULL`,
			`ALTER TABLE images ADD COLUMN video_codec ` + text + ` NULL`,
		}
	}
	register(Migration{Version: 28, Name: "image video", SQLite: stmts("REAL", "TEXT"),
		Postgres: stmts("DOUBLE PRECISION", "TEXT"), MySQL: stmts("DOUBLE", "VARCHAR(16)")})
}
