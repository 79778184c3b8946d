package main

import (
	"context"
	"fmt"

	"github.com/vitrine/vitrine/storage"
)

const migrateUsage = `usage:
  vitrine migrate [--dry-run] [--config FILE] [--data DIR]
applies the pending database schema steps (serve does the same at start); --dry-run prints them
`

// runMigrate is `vitrine migrate`: it applies the pending schema steps (serve
// does the same at start) or, with --dry-run, prints them and changes
// nothing.
func runMigrate(ctx context.Context, args []string) error {
	cmd := newCommand("migrate", migrateUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	dry := cmd.Bool("dry-run", false, "print the pending steps and their SQL; change nothing")
	if _, err := cmd.parse(args, 0, 0); err != nil {
		return err
	}
	cfg, err := loadConfig(f.config, f.data)
	if err != nil {
		return err
	}
	db, err := storage.Open(ctx, cfg.Database, storage.Options{SkipMigrate: true})
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer db.Close()
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("database %s (%s) is at step %d of %d\n", storage.RedactURL(cfg.Database), db.Dialect(), v, len(storage.Migrations()))
	if *dry {
		pending, err := db.PendingMigrations(ctx)
		if err != nil {
			return err
		}
		for _, m := range pending {
			fmt.Printf("would apply step %d: %s\n", m.Version, m.Name)
			for _, stmt := range m.Statements(db.Dialect()) {
				fmt.Printf("  %s;\n", stmt)
			}
		}
		return nil
	}
	applied, err := db.Migrate(ctx)
	for _, m := range applied {
		fmt.Printf("applied step %d: %s\n", m.Version, m.Name)
	}
	return err
}
