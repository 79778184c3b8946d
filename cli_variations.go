package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// variationsSummary is what `vitrine variations` reports.
type variationsSummary struct {
	Images     int64 `json:"images"`
	Built      int64 `json:"built"`
	Skipped    int64 `json:"skipped"`
	Failed     int64 `json:"failed"`
	Variations int64 `json:"variations"`
	Bytes      int64 `json:"bytes"`
}

const variationsUsage = `usage:
  vitrine variations [--user U] [--config FILE] [--data DIR]
builds the stored variations of images stored before they were on
`

// runVariations is `vitrine variations`: it builds the stored variations
// of images stored before variations were on (engine/README.md "Stored variations").
// It walks the images that have none, so a run that stops resumes where it
// was; a failed image is reported and left for the next run.
func runVariations(ctx context.Context, args []string) error {
	cmd := newCommand("variations", variationsUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	user := cmd.String("user", "", "only this user's images")
	if _, err := cmd.parse(args, 0, 0); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := open(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	eng, err := engine.New(st.cfg.Engine)
	if err != nil {
		return err
	}
	b, err := api.NewStoredVariations(st.db, st.blobs, eng, st.cfg.Variations)
	if err != nil {
		return err
	}
	if b == nil {
		return errors.New("variations: stored variations are off (variations.enabled: false)")
	}
	total, err := st.db.CountVariationCandidates(ctx, *user)
	if err != nil {
		return err
	}
	show, end := terminalProgress()
	sum, err := buildAll(ctx, st.db, b, *user, total, show)
	end()
	if eerr := printJSON(sum); eerr != nil {
		return eerr
	}
	if err == nil && sum.Failed > 0 {
		err = fmt.Errorf("variations: %d images failed (run again to retry)", sum.Failed)
	}
	return err
}

// buildAll builds the variations of every image of user (every user's
// when empty) that has none, a page at a time.
func buildAll(ctx context.Context, db *storage.DB, b *api.StoredVariations, user string, total int64, show func(string, int64, int64)) (variationsSummary, error) {
	var sum variationsSummary
	afterUser, afterID := "", ""
	for {
		page, err := db.VariationCandidates(ctx, user, afterUser, afterID, 100)
		if err != nil || len(page) == 0 {
			return sum, err
		}
		for _, img := range page {
			if err := ctx.Err(); err != nil {
				return sum, err
			}
			sum.Images++
			r, err := b.BuildImage(ctx, img.User, img.Identifier)
			switch {
			case err != nil:
				sum.Failed++
				fmt.Fprintf(os.Stderr, "\nvariations: %s/%s: %v\n", img.User, img.Identifier, err)
			case r.Variations == 0:
				sum.Skipped++
			default:
				sum.Built++
				sum.Variations += int64(r.Variations)
				sum.Bytes += r.Bytes
			}
			if show != nil {
				show("variations", sum.Images, total)
			}
		}
		last := page[len(page)-1]
		afterUser, afterID = last.User, last.Identifier
	}
}
