package storage

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// sortColumns maps SortKey.Field to an ORDER BY expression.
var sortColumns = map[string]string{
	"size":            "size",
	"user":            "user_name",
	"imageIdentifier": "identifier",
	"extension":       "extension",
	"mime":            "mime",
	"mimeType":        "mime",
	"added":           "added",
	"updated":         "updated",
	"width":           "width",
	"height":          "height",
	"checksum":        "checksum",
	// Why COALESCE: dialects disagree on where NULLs sort.
	"originalChecksum": "COALESCE(original_checksum, '')",
}

// orderBy turns sort keys into ORDER BY terms, ending with user and
// identifier so that pages are stable.
func orderBy(keys []SortKey) ([]string, error) {
	if len(keys) == 0 {
		keys = []SortKey{{Field: "added", Desc: true}}
	}
	var terms []string
	seen := map[string]bool{}
	for _, k := range keys {
		col, ok := sortColumns[k.Field]
		if !ok {
			return nil, fmt.Errorf("storage: unknown sort field %q: %w", k.Field, ErrInvalid)
		}
		if seen[col] {
			continue
		}
		seen[col] = true
		dir := " ASC"
		if k.Desc {
			dir = " DESC"
		}
		terms = append(terms, col+dir)
		if col == "added" {
			// Why: added is whole seconds; images added within one
			// second keep the order they arrived in.
			terms = append(terms, "inserted"+dir)
		}
	}
	for _, col := range []string{"user_name", "identifier"} {
		if !seen[col] {
			terms = append(terms, col+" ASC")
		}
	}
	return terms, nil
}

// filter applies q's filters to a select on images.
func filter(s *bun.SelectQuery, k kind, q Query) *bun.SelectQuery {
	if len(q.Users) > 0 {
		s = s.Where("user_name IN (?)", bun.List(q.Users))
	}
	if !q.From.IsZero() {
		s = s.Where("added >= ?", q.From.UnixMicro())
	}
	if !q.To.IsZero() {
		s = s.Where("added <= ?", q.To.UnixMicro())
	}
	if len(q.IDs) > 0 {
		s = s.Where("identifier IN (?)", bun.List(q.IDs))
	}
	if len(q.Checksums) > 0 {
		s = s.Where("checksum IN (?)", bun.List(q.Checksums))
	}
	if len(q.OriginalChecksums) > 0 {
		s = s.Where("original_checksum IN (?)", bun.List(q.OriginalChecksums))
	}
	return metadataFilters(s, k, q.Metadata)
}

// Images returns one page of the images that q selects and the number of
// all matches. An unknown sort field or a negative page or limit is
// ErrInvalid. Page 0 is read as page 1.
func (db *DB) Images(ctx context.Context, q Query) (Page, error) {
	if q.Page < 0 || q.Limit < 0 {
		return Page{}, fmt.Errorf("storage: images: negative page or limit: %w", ErrInvalid)
	}
	if q.Similar != nil {
		page, err := db.similarImages(ctx, q)
		if err != nil {
			return Page{}, err
		}
		return page, db.fill(ctx, q, page.Images)
	}
	order, err := orderBy(q.Sort)
	if err != nil {
		return Page{}, err
	}
	var rows []imageRow
	s := filter(db.bun.NewSelect().Model(&rows), db.kind, q)
	// Why the unary plus on SQLite: with a selective filter (a few ids or
	// checksums) its planner still prefers walking a sort index over all of
	// the user's images to avoid sorting a handful of rows; "+col" keeps an
	// ORDER BY term off indexes, so it picks the filter's index instead.
	selective := len(q.IDs) > 0 || len(q.Checksums) > 0 || len(q.OriginalChecksums) > 0
	for _, o := range order {
		if selective && db.kind == sqliteKind {
			o = "+" + o
		}
		s = s.OrderExpr(o)
	}
	if q.Limit > 0 {
		s = s.Limit(int64(q.Limit))
		if q.Page > 1 {
			s = s.Offset(int64((q.Page - 1) * q.Limit))
		}
	}
	if err := s.Scan(ctx); err != nil {
		return Page{}, fmt.Errorf("storage: images: %w", err)
	}
	page := Page{Images: make([]Image, len(rows)), Hits: len(rows)}
	for i := range rows {
		page.Images[i] = rows[i].image()
	}
	if q.Limit > 0 {
		n, err := db.count(ctx, q)
		if err != nil {
			return Page{}, fmt.Errorf("storage: count images: %w", err)
		}
		page.Hits = int(n)
	}
	return page, db.fill(ctx, q, page.Images)
}

// fill sets the metadata and properties of a page's images as q asks.
func (db *DB) fill(ctx context.Context, q Query, images []Image) error {
	if len(images) == 0 {
		return nil
	}
	if q.WithMetadata {
		if err := db.fillMetadata(ctx, images); err != nil {
			return err
		}
	}
	if q.WithProperties {
		return db.fillProperties(ctx, images)
	}
	return nil
}

// count returns the number of images q matches. Filtered by users only, it
// sums their rows of image_counts rather than counting every image.
func (db *DB) count(ctx context.Context, q Query) (int, error) {
	if !q.From.IsZero() || !q.To.IsZero() || len(q.IDs) > 0 || len(q.Checksums) > 0 || len(q.OriginalChecksums) > 0 || len(q.Metadata) > 0 {
		n, err := filter(db.bun.NewSelect().Model((*imageRow)(nil)), db.kind, q).Count(ctx)
		return int(n), err
	}
	var n int64
	s := db.bun.NewSelect().Table("image_counts").ColumnExpr("COALESCE(SUM(images), 0)")
	if len(q.Users) > 0 {
		s = s.Where("user_name IN (?)", bun.List(q.Users))
	}
	if err := s.Scan(ctx, &n); err != nil {
		return 0, err
	}
	return int(n), nil
}
