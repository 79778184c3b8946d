package storage

// Step 23 is a placeholder for another branch's step (the registry needs
// consecutive numbers); the merger drops this file.
func init() {
	register(Migration{Version: 23, Name: "placeholder (quality branch)", SQLite: []string{"SELECT 1"}, Postgres: []string{"SELECT 1"}, MySQL: []string{"SELECT 1"}})
}
