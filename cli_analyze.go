package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// analyzeSummary is what `vitrine analyze` reports.
type analyzeSummary struct {
	Analyzed    int `json:"analyzed"`
	EXIFWritten int `json:"exifWritten"`
	// EXIFLeftOut counts images whose tags would have passed the metadata
	// limits (limits.maxMetadataBytes, limits.maxMetadataDepth).
	EXIFLeftOut int      `json:"exifLeftOut,omitempty"`
	Failed      int      `json:"failed"`
	Seconds     float64  `json:"seconds"`
	Errors      []string `json:"errors,omitempty"`
}

// errAnalyzeFailed makes `vitrine analyze` exit 1 when an image failed.
var errAnalyzeFailed = errors.New("analyze: some images failed (see the summary); run again to retry them")

const analyzeUsage = `usage:
  vitrine analyze [--user U] [--force] [--json] [--config FILE] [--data DIR]
computes the analysis of images stored before it existed (or of every image with --force)
`

// runAnalyze is `vitrine analyze`: it computes the properties (and copies
// the EXIF tags) of images stored before analysis existed, or of every
// image with --force (engine/README.md "Image analysis"). It is resumable: an image
// analysed is recorded at once, and a run begun again skips it.
func runAnalyze(ctx context.Context, args []string) error {
	cmd := newCommand("analyze", analyzeUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	user := cmd.String("user", "", "analyse this user's images only")
	force := cmd.Bool("force", false, "analyse again images analysed before this run began")
	asJSON := cmd.Bool("json", false, "print the summary as JSON (the default when stdout is not a terminal)")
	if _, err := cmd.parse(args, 0, 0); err != nil {
		return err
	}
	st, err := open(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	eng, err := engine.New(st.cfg.Engine)
	if err != nil {
		return err
	}
	defer engine.Shutdown()
	var stale time.Time
	if *force {
		stale = time.Now().Add(time.Second) // stored times are whole seconds
	}
	bar, end := terminalProgress()
	sum, err := analyzeAll(ctx, st, eng, *user, stale, bar)
	end()
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	if *asJSON || !isTerminal(os.Stdout) {
		if err := printJSON(sum); err != nil {
			return err
		}
	} else {
		fmt.Printf("analysed %d images (EXIF copied for %d, left out of %d for the metadata limits), %d failed, in %.1fs\n",
			sum.Analyzed, sum.EXIFWritten, sum.EXIFLeftOut, sum.Failed, sum.Seconds)
		for _, e := range sum.Errors {
			fmt.Println("  " + e)
		}
	}
	if sum.Failed > 0 {
		return errAnalyzeFailed
	}
	return nil
}

// analyzeAll walks the pending images in (user, identifier) order.
func analyzeAll(ctx context.Context, st *stores, eng *engine.Engine, user string, stale time.Time, bar func(string, int64, int64)) (analyzeSummary, error) {
	start := time.Now()
	var sum analyzeSummary
	q := storage.Query{Limit: 1}
	if user != "" {
		q.Users = []string{user}
	}
	total, err := st.db.Images(ctx, q)
	if err != nil {
		return sum, err
	}
	cfg := st.cfg.API.Analysis
	var after storage.ImageRef
	for done := 0; ; {
		imgs, err := st.db.PendingAnalysis(ctx, user, after, stale, 100)
		if err != nil {
			return sum, err
		}
		if len(imgs) == 0 {
			break
		}
		for _, img := range imgs {
			after = storage.ImageRef{User: img.User, Identifier: img.Identifier}
			exif, err := analyzeOne(ctx, st, eng, cfg, img)
			if errors.Is(err, api.ErrEXIFLeftOut) {
				sum.EXIFLeftOut++
				err = nil
			}
			if err != nil {
				sum.Failed++
				if len(sum.Errors) < 20 {
					sum.Errors = append(sum.Errors, fmt.Sprintf("%s/%s: %v", img.User, img.Identifier, err))
				}
			} else {
				sum.Analyzed++
				if exif {
					sum.EXIFWritten++
				}
			}
			if done++; bar != nil {
				bar("analyse", int64(done), int64(total.Hits))
			}
		}
	}
	sum.Seconds = time.Since(start).Seconds()
	return sum, nil
}

// analyzeOne analyses one stored image and copies its EXIF tags into its
// metadata by the rule of uploads (api.StoreEXIF: not over an `exif` key
// already there, within the metadata limits, merged atomically); it
// reports whether it did. Tags left out for the limits are no failure:
// the error wraps api.ErrEXIFLeftOut beside written false.
func analyzeOne(ctx context.Context, st *stores, eng *engine.Engine, cfg api.Analysis, img storage.Image) (bool, error) {
	key := img.Key()
	if img.Video != nil { // a video is analysed by its poster
		poster, ok, err := api.StoredPoster(ctx, st.db, img)
		if err != nil || !ok {
			return false, err // no poster yet: left for the next run, after its first render
		}
		key = poster
	}
	data, err := st.blobs.Get(ctx, key)
	if err != nil {
		return false, err
	}
	props, tags, err := api.Analyze(ctx, eng, cfg, data)
	if err != nil {
		return false, err
	}
	if props == nil {
		props = &storage.Properties{} // recorded, so a resumed run skips it
	}
	if err := st.db.SetProperties(ctx, img.User, img.Identifier, *props); err != nil {
		return false, err
	}
	return api.StoreEXIF(ctx, st.db, st.cfg.API.Limits, img.User, img.Identifier, tags)
}
