// The store's upkeep: vitrine fsck, backup, restore, copy and import.

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// errFindings makes `vitrine fsck` exit 1 when it leaves something as it
// found it (after printing the report): anything at all without --repair,
// what it may not repair with it.
var errFindings = errors.New("fsck: inconsistencies left (see the report)")

const fsckUsage = `usage:
  vitrine fsck [--repair] [--json] [--grace D] [--config FILE] [--data DIR]
compares the database with the blob store; --repair fixes what is safe to fix
`

// runFsck is `vitrine fsck`: it compares the database with the blob store
// and, with --repair, fixes what is safe to fix (storage/README.md "Migrations
// and fsck").
func runFsck(ctx context.Context, args []string) error {
	cmd := newCommand("fsck", fsckUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	repair := cmd.Bool("repair", false, "fix what is safe to fix (default: report only)")
	asJSON := cmd.Bool("json", false, "print the report as JSON")
	grace := cmd.Duration("grace", time.Hour, "blobs younger than this are never orphans (uploads in flight)")
	if _, err := cmd.parse(args, 0, 0); err != nil {
		return err
	}
	st, err := open(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	opts := storage.CheckOptions{Grace: *grace, Repair: *repair,
		Uploads: storage.NewResumable(st.parts, st.cfg.Uploads.API.PartSize)}
	var end func()
	opts.Progress, end = terminalProgress()
	r, err := storage.Check(ctx, st.db, st.blobs, opts)
	end()
	if err != nil {
		return fmt.Errorf("fsck: %w", err)
	}
	if *asJSON {
		if err := printJSON(r); err != nil {
			return err
		}
	} else {
		printReport(os.Stdout, r, *repair)
	}
	if r.Unrepaired() > 0 {
		return errFindings
	}
	return nil
}

func printReport(w io.Writer, r *storage.CheckReport, repaired bool) {
	fmt.Fprintf(w, "read %d image records, %d image blobs, %d variant records, %d variant blobs, %d users' usage, %d filter versions, %d filter bundles\n",
		r.Images, r.ImageBlobs, r.Variants, r.VariantBlobs, r.Users, r.FilterVersions, r.FilterBundles)
	for _, c := range []struct {
		what string
		f    storage.Findings
		fix  string
	}{
		{"image records whose blob is missing", r.ImagesWithoutBlob, "restore the blobs from a backup, or delete the images"},
		{"image blobs no record names", r.OrphanImageBlobs, "--repair deletes them"},
		{"variant records of deleted images", r.VariantsOfDeletedImages, "--repair deletes them"},
		{"variant records whose blob is missing", r.VariantsWithoutBlob, "--repair deletes them"},
		{"variant blobs no record names", r.OrphanVariantBlobs, "--repair deletes them"},
		{"stored variation records whose blob is missing", r.VariationsWithoutBlob, "--repair rebuilds them"},
		{"stored variation blobs no record names", r.OrphanVariationBlobs, "--repair deletes them"},
		{"rows and blobs left of erased users", r.ErasedUserLeftovers, "--repair deletes the blobs; erase the user again for the rows"},
		{"users whose usage (the quotas count it) disagrees with their images", r.UsageMismatches, "--repair recounts them"},
		{"expired resumable uploads", r.ExpiredUploads, "--repair deletes their parts"},
		{"resumable upload parts of no upload", r.OrphanUploadParts, "--repair deletes them"},
		{"filter versions whose bundle is missing", r.FilterVersionsWithoutBundle, "push those versions again (vitrine filter push)"},
		{"filter bundles no version names", r.OrphanFilterBundles, "--repair deletes them"},
	} {
		fmt.Fprintf(w, "%s: %d", c.what, c.f.Count)
		switch {
		case repaired && c.f.Repaired > 0:
			fmt.Fprintf(w, " (repaired %d)", c.f.Repaired)
		case c.f.Count > 0:
			fmt.Fprintf(w, " (%s)", c.fix)
		}
		fmt.Fprintln(w)
		for _, e := range c.f.Examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	fmt.Fprintf(w, "variant cache: %d bytes recorded, %d bytes stored\n", r.VariantRecordBytes, r.VariantBlobBytes)
	fmt.Fprintf(w, "blob queue: %d pending, %d due, %d failing\n", r.Queue.Pending, r.Queue.Due, r.Queue.Failing)
}

const backupUsage = `usage:
  vitrine backup [--json] [--config FILE] [--data DIR] DEST
writes a consistent snapshot of the store (SQLite and its blobs) to DEST,
a folder or a blob store URL (s3://bucket?prefix=backups/), while the
server goes on; blobs are kept once by content, so a second backup to the
same DEST copies only what is new (storage/README.md "Backup and restore")
`

const restoreUsage = `usage:
  vitrine restore [--snapshot NAME] [--json] [--config FILE] [--data DIR] SRC
restores a snapshot of the backup SRC (default: its newest) into the store
--config or --data names, which must be empty, and checks it as vitrine fsck
`

// errNotAllCopied makes backup and restore exit 1 after their summary.
var errNotAllCopied = errors.New("not everything was copied (see the summary)")

// openAt opens the blob store at a folder path or blob store URL (what
// names it in errors).
func openAt(ctx context.Context, what, dest string) (*storage.Blobs, error) {
	u := dest
	if !strings.Contains(dest, "://") {
		abs, err := filepath.Abs(dest)
		if err != nil {
			return nil, err
		}
		u = "file://" + filepath.ToSlash(abs)
	}
	b, err := storage.OpenBlobs(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return b, nil
}

// printJSON writes v to standard output as indented JSON.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runBackup is `vitrine backup DEST`.
func runBackup(ctx context.Context, args []string) error {
	cmd := newCommand("backup", backupUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	asJSON := cmd.Bool("json", false, "print the summary as JSON")
	pos, err := cmd.parse(args, 1, 1)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	dest, err := openAt(ctx, "backup", pos[0])
	if err != nil {
		return err
	}
	defer dest.Close()
	st, err := open(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	opts := storage.BackupOptions{}
	if st.cfg.Secret == "" {
		opts.SecretFile = filepath.Join(f.data, "secret")
	}
	var end func()
	opts.Progress, end = terminalProgress()
	r, err := storage.Backup(ctx, st.db, st.blobs, dest, opts)
	end()
	return summarize("backup", r, err, *asJSON)
}

// runRestore is `vitrine restore SRC`.
func runRestore(ctx context.Context, args []string) error {
	cmd := newCommand("restore", restoreUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	asJSON := cmd.Bool("json", false, "print the summary as JSON")
	snapshot := cmd.String("snapshot", "", "the snapshot to restore (default: the newest)")
	pos, err := cmd.parse(args, 1, 1)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := loadConfig(f.config, f.data)
	if err != nil {
		return err
	}
	// Into PostgreSQL or MySQL: the snapshot's SQLite file goes to a
	// temporary folder, and its rows into the database (checkRestored).
	file, ok := storage.SQLiteFile(cfg.Database)
	if !ok {
		tmp, err := os.MkdirTemp("", "vitrine-restore-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		file = filepath.Join(tmp, "vitrine.db")
	}
	src, err := openAt(ctx, "restore", pos[0])
	if err != nil {
		return err
	}
	defer src.Close()
	name := *snapshot
	if name == "" {
		names, err := storage.Snapshots(ctx, src)
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		if len(names) == 0 {
			return fmt.Errorf("restore: %s holds no complete snapshot", pos[0])
		}
		name = names[len(names)-1]
	}
	blobs, err := storage.OpenBlobs(ctx, cfg.Storage)
	if err != nil {
		return fmt.Errorf("restore: storage: %w", err)
	}
	t := storage.RestoreTarget{DatabaseFile: file, Blobs: blobs}
	if cfg.Secret == "" {
		t.SecretFile = filepath.Join(f.data, "secret")
	}
	prog, end := terminalProgress()
	r, err := storage.Restore(ctx, src, name, t, prog)
	end()
	blobs.Close()
	if err == nil {
		err = checkRestored(ctx, cfg, f.data, file, !ok, r)
	}
	return summarize("restore", r, err, *asJSON)
}

// checkRestored opens the restored store (migrating it), loads the
// snapshot's file into its database when that is not the file (load),
// drops the hold its backup had taken and checks it as `vitrine fsck`
// does.
func checkRestored(ctx context.Context, cfg *fileConfig, data, file string, load bool, r *storage.BackupReport) error {
	st, err := openStores(ctx, cfg, data)
	if err != nil {
		return err
	}
	defer st.Close()
	if load {
		if err := storage.LoadDump(ctx, file, st.db); err != nil {
			return err
		}
	}
	if err := st.db.DropHolds(ctx); err != nil {
		return err
	}
	c, err := storage.Check(ctx, st.db, st.blobs, storage.CheckOptions{})
	if err != nil {
		return fmt.Errorf("restore: check: %w", err)
	}
	r.Check = c
	if c.Unrepaired() > 0 {
		return fmt.Errorf("restore: the restored store is not consistent: run vitrine fsck for the findings")
	}
	return nil
}

// summarize prints what a backup or restore did, and returns its error,
// or errNotAllCopied when something was not copied.
func summarize(what string, r *storage.BackupReport, err error, asJSON bool) error {
	if r == nil {
		return err
	}
	out := struct {
		*storage.BackupReport
		Error string `json:"error,omitempty"`
	}{BackupReport: r}
	if err != nil {
		out.Error = err.Error()
	}
	line := fmt.Sprintf("%s: snapshot %s taken %s: %d blobs (%d bytes), %d copied (%d bytes) in %.1f s",
		what, r.Snapshot, r.Taken.Format("2006-01-02 15:04:05.000000Z07:00"), r.Blobs, r.Bytes, r.Copied, r.CopiedBytes, r.Seconds)
	return printSummary(asJSON, out, line, "not copied", r.Failed, err)
}

// printSummary prints a command's summary: v as JSON, or line and a line
// per failure. It returns err, or errNotAllCopied when something failed.
func printSummary(asJSON bool, v any, line, label string, failed []string, err error) error {
	if asJSON {
		if eerr := printJSON(v); eerr != nil {
			return eerr
		}
	} else {
		fmt.Println(line)
		for _, f := range failed {
			fmt.Printf("  %s: %s\n", label, f)
		}
	}
	if err == nil && len(failed) > 0 {
		err = errNotAllCopied
	}
	return err
}

const importUsage = `usage:
  vitrine import imbo --database URL --storage URL [--json] [--config FILE] [--data DIR]
imports an Imbo 3 installation into the store --config or --data names:
its database (mysql://, postgres:// or sqlite://, the schema Imbo ships)
and its image files (a folder, Imbo's Filesystem dataDir, or a bucket URL
with the same layout); identifiers, dates, metadata and short URLs are
kept (storage/README.md "Importing from Imbo")
`

// runImport is `vitrine import imbo`.
func runImport(ctx context.Context, args []string) error {
	cmd := newCommand("import", importUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	asJSON := cmd.Bool("json", false, "print the summary as JSON")
	database := cmd.String("database", "", "Imbo's database URL (mysql://user:password@host:3306/imbo)")
	files := cmd.String("storage", "", "Imbo's image files: a folder or a blob store URL")
	pos, err := cmd.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if pos[0] != "imbo" {
		return &usageError{cmd: cmd, msg: fmt.Sprintf("import: unknown source %q: vitrine imports from imbo", pos[0])}
	}
	if *database == "" || *files == "" {
		return &usageError{cmd: cmd, msg: "import imbo: --database and --storage are required"}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	images, err := openAt(ctx, "import: --storage", *files)
	if err != nil {
		return err
	}
	defer images.Close()
	st, err := open(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	prog, end := terminalProgress()
	r, err := storage.ImportImbo(ctx, storage.ImboSource{Database: *database, Images: images}, st.db, st.blobs, prog)
	end()
	if r == nil {
		return err
	}
	line := fmt.Sprintf("import: %d images: %d imported (%d bytes), %d there already, %d with metadata; %d short URLs, %d imported; %d Imbo variations left (vitrine variations builds its own); %.1f s",
		r.Images, r.Imported, r.Bytes, r.Present, r.Metadata, r.ShortURLs, r.ShortURLsImported, r.Variations, r.Seconds)
	return printSummary(*asJSON, r, line, "not imported", r.Failed, err)
}

const copyUsage = `usage:
  vitrine copy --to FILE [--to-data DIR] [--cutover] [--rate MB] [--pause-timeout D] [--json] [--config FILE] [--data DIR]
  vitrine copy --release [--config FILE] [--data DIR]
copies the store --config or --data names (database, blobs, keys, rules,
webhooks, filters, history) to the one the configuration FILE names, while
it serves; a rerun copies only what changed. --cutover ends with a short
write pause and a last pass: the target is then the source at one moment,
and the source refuses writes until its instances run on the target
(--release takes it back) (storage/README.md "Moving a store")
`

// runCopy is `vitrine copy --to FILE`.
func runCopy(ctx context.Context, args []string) error {
	cmd := newCommand("copy", copyUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	to := cmd.String("to", "", "the target's configuration file (YAML)")
	toData := cmd.String("to-data", "", "the target's data directory (default: FILE's folder)")
	cut := cmd.Bool("cutover", false, "end with the write pause and the last pass, and mark the source moved")
	release := cmd.Bool("release", false, "let a moved (or paused) source take writes again")
	rate := cmd.Float64("rate", 0, "copy blobs at most this many MB a second (default: as fast as the stores go)")
	pause := cmd.Duration("pause-timeout", 30*time.Second, "how long to wait for the instances to stop their writes")
	asJSON := cmd.Bool("json", false, "print the summary as JSON")
	if _, err := cmd.parse(args, 0, 0); err != nil {
		return err
	}
	if *release {
		st, err := openDB(ctx, f)
		if err != nil {
			return err
		}
		defer st.Close()
		return st.db.ReleaseWrites(ctx)
	}
	if *to == "" {
		return &usageError{cmd: cmd, msg: "copy: --to FILE names the target's configuration"}
	}
	src, err := open(ctx, f)
	if err != nil {
		return err
	}
	defer src.Close()
	data := cmp.Or(*toData, filepath.Dir(*to))
	tcfg, err := loadConfig(*to, data)
	if err != nil {
		return fmt.Errorf("copy: --to: %w", err)
	}
	dst, err := openStores(ctx, tcfg, data)
	if err != nil {
		return fmt.Errorf("copy: --to: %w", err)
	}
	defer dst.Close()
	opts := storage.CopyOptions{Cutover: *cut, PauseTimeout: *pause, BytesPerSecond: int64(*rate * 1e6),
		Target: storage.RedactURL(tcfg.Database) + " + " + storage.RedactURL(tcfg.Storage)}
	var end func()
	opts.Progress, end = terminalProgress()
	r, err := storage.Copy(ctx, src.db, src.blobs, dst.db, dst.blobs, opts)
	end()
	if err == nil && r != nil {
		err = checkBoth(ctx, src, dst, r)
	}
	return summarizeCopy(r, err, *asJSON)
}

// checkBoth checks each store of a copy as `vitrine fsck` does.
func checkBoth(ctx context.Context, src, dst *stores, r *storage.CopyReport) error {
	var err error
	if r.Source, err = storage.Check(ctx, src.db, src.blobs, storage.CheckOptions{}); err != nil {
		return fmt.Errorf("copy: check the source: %w", err)
	}
	if r.Target, err = storage.Check(ctx, dst.db, dst.blobs, storage.CheckOptions{}); err != nil {
		return fmt.Errorf("copy: check the target: %w", err)
	}
	if n := r.Target.Unrepaired(); n > 0 && n > r.Source.Unrepaired() {
		return fmt.Errorf("copy: the target has %d findings the source has not: run vitrine fsck on it", n-r.Source.Unrepaired())
	}
	return nil
}

// summarizeCopy prints what a copy did and returns its error.
func summarizeCopy(r *storage.CopyReport, err error, asJSON bool) error {
	if r == nil {
		return err
	}
	out := struct {
		*storage.CopyReport
		Error string `json:"error,omitempty"`
	}{CopyReport: r}
	if err != nil {
		out.Error = err.Error()
	}
	var b strings.Builder
	for _, p := range r.Passes {
		fmt.Fprintf(&b, "copy: %s pass: %d rows (%d inserted, %d updated, %d deleted), %d blobs (%d copied, %d bytes; %d deleted) in %.1f s\n",
			p.Name, p.Rows, p.Inserted, p.Updated, p.Deleted, p.Blobs, p.CopiedBlobs, p.CopiedBytes, p.DeletedBlob, p.Seconds)
	}
	switch {
	case r.Moved:
		fmt.Fprintf(&b, "copy: writes paused %.2f s; the source is marked moved and refuses writes: restart its instances on the target", r.PauseSeconds)
	case err == nil:
		b.WriteString("copy: the target holds the source as it was at the last pass; run again with --cutover to finish")
	}
	return printSummary(asJSON, out, strings.TrimSpace(b.String()), "not copied", r.Failed, err)
}
