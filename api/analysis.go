package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/engine/schema"
	"github.com/vitrine/vitrine/storage"
)

// Analysis configures what an upload learns about itself (engine/README.md,
// "Image analysis"). Everything is on by default except GPS positions.
type Analysis struct {
	// EXIF copies the original's EXIF, IPTC and XMP tags into the image's
	// metadata under the key `exif`. Default true.
	EXIF *bool `yaml:"exif"`
	// EXIFTags lists the tags to copy, with wildcards (`*`, `?`, `[a-z]`),
	// without regard to case: `Make`, `Date*`, `IPTC:Keywords`, `XMP:dc:*`.
	// Default every tag (`*`).
	EXIFTags []string `yaml:"exifTags"`
	// EXIFGPS copies the GPS tags too, which say where a picture was taken.
	// Default false: they are dropped whatever exifTags says.
	EXIFGPS bool `yaml:"exifGps"`
	// Placeholders computes the BlurHash and ThumbHash strings. Default true.
	Placeholders *bool `yaml:"placeholders"`
	// Colors computes the average colour and the palette. Default true.
	Colors *bool `yaml:"colors"`
	// PaletteSize is the number of dominant colours (1-16, default 5).
	PaletteSize int `yaml:"paletteSize"`
	// PerceptualHash computes the 64-bit perceptual hash that
	// `similarTo` searches. Default true.
	PerceptualHash *bool `yaml:"perceptualHash"`
	// RejectNearDuplicates, when set, refuses an upload (409, naming the
	// image) whose perceptual hash is within this many bits (0-64) of one
	// of the user's images. Off by default. Two near duplicates uploaded at
	// the same moment may both pass.
	RejectNearDuplicates *int `yaml:"rejectNearDuplicates"`
}

// defaults fills unset fields.
func (a *Analysis) defaults() {
	if a.EXIFTags == nil {
		a.EXIFTags = []string{"*"}
	}
	if a.PaletteSize == 0 {
		a.PaletteSize = 5
	}
}

// validate reports the first problem; zero values stand for the defaults.
func (a *Analysis) validate() error {
	for _, p := range a.EXIFTags {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("analysis.exifTags: bad pattern %q: %w", p, err)
		}
	}
	if d := a.RejectNearDuplicates; d != nil && (*d < 0 || *d > 64) {
		return fmt.Errorf("analysis.rejectNearDuplicates: want 0-64, got %d", *d)
	}
	if a.PaletteSize < 0 || a.PaletteSize > 16 {
		return fmt.Errorf("analysis.paletteSize: want 1-16 (0 for the default, 5), got %d", a.PaletteSize)
	}
	return nil
}

// options is what the engine computes.
func (a Analysis) options() engine.AnalyzeOptions {
	return engine.AnalyzeOptions{
		Placeholders: boolOr(a.Placeholders, true), Colours: boolOr(a.Colors, true),
		PaletteSize: a.PaletteSize, PHash: boolOr(a.PerceptualHash, true),
	}
}

// ParseColor parses a colour of vitrine's one colour syntax
// (schema.ParseColor: hex of 3, 6 or 8 digits, with or without `#`,
// either case), as the engine's and the filters' colour parameters take
// it; the admin UI checks the analysis's colours with it.
func ParseColor(s string) (schema.Color, bool) { return schema.ParseColor(s, false) }

// EXIFKey is the metadata key the EXIF, IPTC and XMP tags are copied to.
const EXIFKey = "exif"

// Analyze computes an image's properties (nil when the configuration asks
// for none) and its EXIF tags (nil when off or none), as at upload, with
// a's defaults filled. A picture the engine cannot decode is an error.
func Analyze(ctx context.Context, eng *engine.Engine, a Analysis, data []byte) (*storage.Properties, map[string]any, error) {
	a.defaults()
	var tags map[string]any
	if boolOr(a.EXIF, true) {
		tags = engine.ReadEXIF(data, engine.EXIFOptions{Tags: a.EXIFTags, GPS: a.EXIFGPS})
		if len(tags) == 0 {
			tags = nil
		}
	}
	opts := a.options()
	if !opts.Placeholders && !opts.Colours && !opts.PHash {
		return nil, tags, nil
	}
	res, err := eng.Analyze(ctx, data, opts)
	if err != nil {
		return nil, tags, fmt.Errorf("analyse image: %w", err)
	}
	return &storage.Properties{
		BlurHash: res.BlurHash, ThumbHash: res.ThumbHash, AverageColor: res.AverageColour,
		Palette: res.Palette, PHash: res.PHash, HasPHash: res.HasPHash,
	}, tags, nil
}

// Analyze is the package function with the server's configuration.
func (s *Server) Analyze(ctx context.Context, data []byte) (*storage.Properties, map[string]any, error) {
	return Analyze(ctx, s.engine, s.cfg.Analysis, data)
}

// ErrEXIFLeftOut is why an image's EXIF tags were not copied into its
// metadata: the document would pass limits.maxMetadataBytes or
// limits.maxMetadataDepth.
var ErrEXIFLeftOut = errors.New("EXIF tags left out: the metadata would exceed its limits")

// withEXIF is the one rule by which EXIF tags join an image's metadata md,
// at upload and in `vitrine analyze`: it returns a copy of md with tags
// under `exif`, nil when there are no tags or md has an `exif` key of its
// own (a listener's or the client's wins), or ErrEXIFLeftOut when the
// document would pass the metadata limits that any client's document
// must keep (its size and depth).
func withEXIF(md, tags map[string]any, lim Limits) (map[string]any, error) {
	if tags == nil {
		return nil, nil
	}
	if _, taken := md[EXIFKey]; taken {
		return nil, nil
	}
	out := maps.Clone(md)
	if out == nil {
		out = map[string]any{}
	}
	out[EXIFKey] = tags
	doc, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEXIFLeftOut, err)
	}
	if int64(len(doc)) > lim.MaxMetadataBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than limits.maxMetadataBytes (%d)", ErrEXIFLeftOut, len(doc), lim.MaxMetadataBytes)
	}
	if err := validateMetadata(out, 1, lim.MaxMetadataDepth); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEXIFLeftOut, err)
	}
	return out, nil
}

// EXIFStore is what StoreEXIF needs of the metadata store; *storage.DB
// has it.
type EXIFStore interface {
	Metadata(ctx context.Context, user, id string) (map[string]any, error)
	MergeMetadata(ctx context.Context, user, id string, md map[string]any) (map[string]any, error)
}

// StoreEXIF copies the EXIF tags of an image already stored into its
// metadata by the rule of uploads (withEXIF, with lim's defaults filled):
// `vitrine analyze` does, for images stored before analysis. Only the
// `exif` key is written, by the store's atomic merge (MergeMetadata
// locks the image, reads and writes in one transaction), so keys written
// meanwhile are kept. It reports whether the tags were written; an error
// wrapping ErrEXIFLeftOut says they would pass the limits.
func StoreEXIF(ctx context.Context, st EXIFStore, lim Limits, user, id string, tags map[string]any) (bool, error) {
	if tags == nil {
		return false, nil
	}
	lim.defaults()
	md, err := st.Metadata(ctx, user, id)
	if err != nil {
		return false, err
	}
	merged, err := withEXIF(md, tags, lim)
	if merged == nil || err != nil {
		return false, err
	}
	if _, err := st.MergeMetadata(ctx, user, id, map[string]any{EXIFKey: tags}); err != nil {
		return false, err
	}
	return true, nil
}

// propertyFields are the listing keys of the properties, in order.
var propertyFields = []string{"blurhash", "thumbhash", "averageColor", "palette", "phash", "distance"}

// propertyValues adds img's properties to a listing entry's values.
func propertyValues(img storage.Image, similar bool, vals map[string]any) {
	if p := img.Properties; p != nil {
		vals["blurhash"], vals["thumbhash"] = p.BlurHash, p.ThumbHash
		vals["averageColor"], vals["palette"] = p.AverageColor, p.Palette
		if p.HasPHash {
			vals["phash"] = fmt.Sprintf("%016x", p.PHash)
		}
	}
	if similar {
		vals["distance"] = img.Distance
	}
}
