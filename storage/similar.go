package storage

import (
	"context"
	"fmt"
	"math/bits"
	"slices"

	"github.com/uptrace/bun"
)

// Why a scan rather than an index lookup: a Hamming ball of radius 10 or
// more around a 64-bit hash has no useful prefix, and splitting the hash
// into bands that must match exactly (the pigeonhole scheme) only finds
// every match for radii below the number of bands. One user's hashes are
// read from the covering index image_properties_phash (user_name, phash,
// identifier) and compared with a popcount; BenchmarkSimilar measures it
// at 100,000 images per user on each backend (e2e/README.md, "Image analysis: cost").

// HashDistance is the Hamming distance between two perceptual hashes: the
// number of bits in which they differ, 0 to 64. Every comparison of
// hashes goes through it (similar images, the blocklist).
func HashDistance(a, b uint64) int { return bits.OnesCount64(a ^ b) }

// candidate is one image within the distance.
type candidate struct {
	ref  ImageRef
	dist int
}

// similarImages serves Images for a query with Similar set.
func (db *DB) similarImages(ctx context.Context, q Query) (Page, error) {
	sim := q.Similar
	if sim.MaxDistance < 0 || sim.MaxDistance > 64 {
		return Page{}, fmt.Errorf("storage: images: distance %d out of 0-64: %w", sim.MaxDistance, ErrInvalid)
	}
	cands, err := db.hashCandidates(ctx, q)
	if err != nil {
		return Page{}, err
	}
	if hasFilters(q) {
		if cands, err = db.keepFiltered(ctx, q, cands); err != nil {
			return Page{}, err
		}
	}
	page := Page{Hits: len(cands)}
	if q.Limit > 0 {
		start := min(max(q.Page-1, 0)*q.Limit, len(cands))
		cands = cands[start:min(start+q.Limit, len(cands))]
	}
	if len(cands) == 0 {
		page.Images = []Image{}
		return page, nil
	}
	if page.Images, err = db.imagesByRef(ctx, cands); err != nil {
		return Page{}, err
	}
	return page, nil
}

// hasFilters reports whether q filters by more than users.
func hasFilters(q Query) bool {
	return !q.From.IsZero() || !q.To.IsZero() || len(q.IDs) > 0 || len(q.Checksums) > 0 ||
		len(q.OriginalChecksums) > 0 || len(q.Metadata) > 0
}

// hashCandidates returns the images of q's users within the distance,
// nearest first, then by user and identifier. PostgreSQL and MariaDB count
// the differing bits themselves (bit_count, BIT_COUNT) and send only the
// matches; on SQLite, which has no popcount, Go counts (nearHashes) and
// the matches are read by hash.
func (db *DB) hashCandidates(ctx context.Context, q Query) ([]candidate, error) {
	sim := q.Similar
	var dist string
	args := []any{}
	switch db.kind {
	case postgresKind:
		dist = "bit_count((phash # ?::bigint)::bit(64))"
		args = append(args, int64(sim.Hash))
	case mysqlKind:
		dist = "BIT_COUNT(phash ^ ?)"
		args = append(args, int64(sim.Hash))
	default:
		dist = "phash"
	}
	query := "SELECT user_name, identifier, " + dist + " FROM image_properties WHERE phash IS NOT NULL"
	if len(q.Users) > 0 {
		query += " AND user_name IN (?)"
		args = append(args, bun.List(q.Users))
	}
	if db.kind != sqliteKind {
		query += " AND " + dist + " <= ?"
		args = append(args, int64(sim.Hash), sim.MaxDistance)
	} else {
		near, few, err := db.nearHashes(ctx, q)
		if err != nil {
			return nil, err
		}
		if len(near) == 0 {
			return nil, nil
		}
		if few {
			query += " AND phash IN (?)"
			args = append(args, bun.List(near))
		}
	}
	// Why a raw query: its rows stream (the statement timeout of
	// timeout.go still bounds it), where a scan into structs would hold
	// 100,000 of them.
	rows, err := db.bun.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: similar images: %w", err)
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		var ref ImageRef
		var v int64
		if err := rows.Scan(&ref.User, &ref.Identifier, &v); err != nil {
			return nil, fmt.Errorf("storage: similar images: %w", err)
		}
		d := int(v)
		if db.kind == sqliteKind {
			d = HashDistance(uint64(v), sim.Hash)
		}
		if d > sim.MaxDistance || ref == sim.Exclude {
			continue
		}
		out = append(out, candidate{ref, d})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: similar images: %w", err)
	}
	slices.SortFunc(out, func(a, b candidate) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		if a.ref.User != b.ref.User {
			return cmpString(a.ref.User, b.ref.User)
		}
		return cmpString(a.ref.Identifier, b.ref.Identifier)
	})
	return out, nil
}

// maxNearHashes is the most matching hashes nearHashes hands back for an
// IN list; beyond it the user's rows are read whole.
const maxNearHashes = 500

// nearHashes reads only the hashes of q's users (SQLite, from the covering
// index) and returns those within the distance, and whether they are few
// enough to look the images up by them. Why two steps: reading 100,000
// integers costs far less than reading 100,000 names, and few images are
// usually near.
func (db *DB) nearHashes(ctx context.Context, q Query) (near []int64, few bool, err error) {
	query, args := "SELECT phash FROM image_properties WHERE phash IS NOT NULL", []any{}
	if len(q.Users) > 0 {
		query += " AND user_name IN (?)"
		args = append(args, bun.List(q.Users))
	}
	rows, err := db.bun.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: similar images: %w", err)
	}
	defer rows.Close()
	seen := map[int64]bool{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, false, fmt.Errorf("storage: similar images: %w", err)
		}
		if HashDistance(uint64(v), q.Similar.Hash) <= q.Similar.MaxDistance && !seen[v] {
			seen[v] = true
			near = append(near, v)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("storage: similar images: %w", err)
	}
	return near, len(near) <= maxNearHashes, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// keepFiltered drops the candidates that q's other filters reject.
func (db *DB) keepFiltered(ctx context.Context, q Query, cands []candidate) ([]candidate, error) {
	keep := map[ImageRef]bool{}
	for chunk := range slices.Chunk(cands, 500) {
		ids := make([]string, len(chunk))
		for i, c := range chunk {
			ids[i] = c.ref.Identifier
		}
		var rows []imageRow
		err := filter(db.bun.NewSelect().Model(&rows).Column("user_name", "identifier"), db.kind, q).
			Where("identifier IN (?)", bun.List(ids)).Scan(ctx)
		if err != nil {
			return nil, fmt.Errorf("storage: similar images: %w", err)
		}
		for _, r := range rows {
			keep[ImageRef{r.User, r.Identifier}] = true
		}
	}
	return slices.DeleteFunc(cands, func(c candidate) bool { return !keep[c.ref] }), nil
}

// imagesByRef reads the candidates' records, in the candidates' order.
func (db *DB) imagesByRef(ctx context.Context, cands []candidate) ([]Image, error) {
	var users, ids []string
	seen := map[string]bool{}
	for _, c := range cands {
		if !seen[c.ref.User] {
			seen[c.ref.User] = true
			users = append(users, c.ref.User)
		}
		ids = append(ids, c.ref.Identifier)
	}
	var rows []imageRow
	err := db.bun.NewSelect().Model(&rows).
		Where("user_name IN (?) AND identifier IN (?)", bun.List(users), bun.List(ids)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: similar images: %w", err)
	}
	byRef := make(map[ImageRef]Image, len(rows))
	for i := range rows {
		byRef[ImageRef{rows[i].User, rows[i].Identifier}] = rows[i].image()
	}
	out := make([]Image, 0, len(cands))
	for _, c := range cands {
		if img, ok := byRef[c.ref]; ok { // deleted meanwhile: skipped
			img.Distance = c.dist
			out = append(out, img)
		}
	}
	return out, nil
}
