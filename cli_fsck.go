package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	if isTerminal(os.Stderr) {
		opts.Progress = progress(os.Stderr)
	}
	r, err := storage.Check(ctx, st.db, st.blobs, opts)
	if opts.Progress != nil {
		fmt.Fprintln(os.Stderr)
	}
	if err != nil {
		return fmt.Errorf("fsck: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
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
