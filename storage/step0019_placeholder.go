package storage

// PLACEHOLDER, DROP AT MERGE: step 19 is written on another branch; this
// stand-in only keeps the registry's numbers without a gap (checkRegistry)
// so that step 20 can be tested on this branch. It changes nothing.
func init() {
	register(Migration{Version: 19, Name: "placeholder for step 19 (drop at merge)",
		SQLite: []string{`SELECT 1`}, Postgres: []string{`SELECT 1`}, MySQL: []string{`SELECT 1`}})
}
