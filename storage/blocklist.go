package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/uptrace/bun"
)

// The takedown blocklist (migration step 22): entries that block pictures
// across every user, by checksum or by perceptual hash within a distance.
// Storage keeps the entries and finds the stored images an entry matches;
// checking uploads against them is the API's (api/blocklist.go).

// BlocklistEntry blocks the picture whose MD5 is Checksum, or, with
// HasPHash, every picture whose perceptual hash is within Distance bits of
// PHash.
type BlocklistEntry struct {
	// ID names the entry in /blocklist/<id>; AddBlocklistEntry sets it.
	ID int64
	// Checksum is the MD5 of the blocked bytes, 32 lower-case hex digits;
	// "" for a hash entry.
	Checksum string
	// PHash is the perceptual hash (Properties.PHash) when HasPHash.
	PHash    uint64
	HasPHash bool
	// Distance is how many bits a hash may differ from PHash and still be
	// blocked (0-64); 0 for a checksum entry.
	Distance int
	// Reason says why, for the people who read the list (at most 1024
	// bytes).
	Reason string
	// Actor is the key that added it (the context's actor, WithActor) and
	// Created when; AddBlocklistEntry sets both.
	Actor   string
	Created time.Time
}

// Blocks reports whether the entry blocks a picture with one of checksums,
// or, when hasHash, with the perceptual hash hash.
func (e BlocklistEntry) Blocks(checksums []string, hash uint64, hasHash bool) bool {
	if e.HasPHash {
		return hasHash && HashDistance(e.PHash, hash) <= e.Distance
	}
	for _, c := range checksums {
		if c != "" && c == e.Checksum {
			return true
		}
	}
	return false
}

// maxBlocklistReason is the longest reason an entry keeps.
const maxBlocklistReason = 1024

// blocklistRow is the blocklist table.
type blocklistRow struct {
	bun.BaseModel `bun:"table:blocklist"`

	ID       int64          `bun:"id,pk,autoincrement"`
	Checksum sql.NullString `bun:"checksum"`
	PHash    sql.NullInt64  `bun:"phash"`
	Distance int            `bun:"distance"`
	Reason   string         `bun:"reason"`
	Actor    string         `bun:"actor"`
	Created  int64          `bun:"created"` // unix microseconds
}

func (r blocklistRow) entry() BlocklistEntry {
	return BlocklistEntry{ID: r.ID, Checksum: r.Checksum.String, PHash: uint64(r.PHash.Int64), HasPHash: r.PHash.Valid,
		Distance: r.Distance, Reason: r.Reason, Actor: r.Actor, Created: createdTime(r.Created)}
}

// checkBlocklistEntry refuses an entry that is neither exactly one
// checksum of 32 lower-case hex digits nor one hash with a distance of
// 0-64, or whose reason is too long.
func checkBlocklistEntry(e BlocklistEntry) error {
	switch {
	case e.HasPHash == (e.Checksum != ""):
		return fmt.Errorf("storage: blocklist entry: one checksum or one perceptual hash: %w", ErrInvalid)
	case !e.HasPHash && !isMD5Hex(e.Checksum):
		return fmt.Errorf("storage: blocklist entry: checksum %q is not 32 lower-case hex digits: %w", e.Checksum, ErrInvalid)
	case e.HasPHash && (e.Distance < 0 || e.Distance > 64):
		return fmt.Errorf("storage: blocklist entry: distance %d out of 0-64: %w", e.Distance, ErrInvalid)
	case !e.HasPHash && e.Distance != 0:
		return fmt.Errorf("storage: blocklist entry: a checksum has no distance: %w", ErrInvalid)
	}
	return checkLen("blocklist reason", e.Reason, maxBlocklistReason, false)
}

func isMD5Hex(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// blocklistDetail is what the audit log and the event say of an entry.
func blocklistDetail(e BlocklistEntry) map[string]any {
	d := map[string]any{"reason": e.Reason}
	if e.HasPHash {
		d["phash"], d["distance"] = fmt.Sprintf("%016x", e.PHash), e.Distance
	} else {
		d["checksum"] = e.Checksum
	}
	return d
}

// AddBlocklistEntry stores e, setting its ID, Actor (the context's) and
// Created; ErrInvalid when it is malformed (checkBlocklistEntry), ErrExist
// when an entry blocks its checksum or hash already (whatever its
// distance).
func (db *DB) AddBlocklistEntry(ctx context.Context, e *BlocklistEntry) error {
	if err := checkBlocklistEntry(*e); err != nil {
		return err
	}
	e.Actor = ActorFrom(ctx).Key
	e.Created = time.Now().UTC().Truncate(time.Microsecond)
	row := &blocklistRow{Distance: e.Distance, Reason: e.Reason, Actor: clip(e.Actor, maxName), Created: e.Created.UnixMicro()}
	if e.HasPHash {
		row.PHash = sql.NullInt64{Int64: int64(e.PHash), Valid: true}
	} else {
		row.Checksum = sql.NullString{String: e.Checksum, Valid: true}
	}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if taken, err := blocklistHas(ctx, tx, row); err != nil || taken {
			return errors.Join(err, ErrExist)
		}
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return err
		}
		e.ID = row.ID
		return db.audit(ctx, tx, auditEvent{"blocklist.add", strconv.FormatInt(row.ID, 10), blocklistDetail(*e)})
	})
	if err != nil && !errors.Is(err, ErrExist) {
		// Why the second look: two adds of one value at the same moment
		// both pass the first, and the unique index refuses the second
		// with an error each driver words its own way.
		if taken, _ := blocklistHas(ctx, db.bun, row); taken {
			err = ErrExist
		}
	}
	if err != nil {
		return fmt.Errorf("storage: add blocklist entry: %w", err)
	}
	return nil
}

// blocklistHas reports whether an entry blocks row's checksum or hash.
func blocklistHas(ctx context.Context, conn bun.IDB, row *blocklistRow) (bool, error) {
	q := conn.NewSelect().Model((*blocklistRow)(nil))
	if row.PHash.Valid {
		q = q.Where("phash = ?", row.PHash.Int64)
	} else {
		q = q.Where("checksum = ?", row.Checksum.String)
	}
	n, err := q.Count(ctx)
	return n > 0, err
}

// DeleteBlocklistEntry deletes the entry id; ErrNotExist when there is
// none.
func (db *DB) DeleteBlocklistEntry(ctx context.Context, id int64) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var row blocklistRow
		err := db.forUpdate(tx.NewSelect().Model(&row).Where("id = ?", id)).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotExist
		}
		if err != nil {
			return err
		}
		if err := deleted(tx.NewDelete().Model((*blocklistRow)(nil)).Where("id = ?", id).Exec(ctx)); err != nil {
			return err
		}
		return db.audit(ctx, tx, auditEvent{"blocklist.delete", strconv.FormatInt(id, 10), blocklistDetail(row.entry())})
	})
	if err != nil {
		return fmt.Errorf("storage: delete blocklist entry %d: %w", id, err)
	}
	return nil
}

// BlocklistEntry returns the entry id; ErrNotExist when there is none.
func (db *DB) BlocklistEntry(ctx context.Context, id int64) (BlocklistEntry, error) {
	var row blocklistRow
	err := db.bun.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return BlocklistEntry{}, fmt.Errorf("storage: blocklist entry %d: %w", id, ErrNotExist)
	}
	if err != nil {
		return BlocklistEntry{}, fmt.Errorf("storage: blocklist entry %d: %w", id, err)
	}
	return row.entry(), nil
}

// Blocklist returns a page of the entries, newest first, and how many
// there are; limit 0 is every entry.
func (db *DB) Blocklist(ctx context.Context, page, limit int) ([]BlocklistEntry, int, error) {
	if page < 0 || limit < 0 {
		return nil, 0, fmt.Errorf("storage: blocklist: negative page or limit: %w", ErrInvalid)
	}
	n, err := db.bun.NewSelect().Model((*blocklistRow)(nil)).Count(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("storage: blocklist: %w", err)
	}
	var rows []blocklistRow
	q := db.bun.NewSelect().Model(&rows).OrderExpr("id DESC")
	if limit > 0 {
		q = q.Limit(int64(limit)).Offset(int64(max(page-1, 0) * limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, 0, fmt.Errorf("storage: blocklist: %w", err)
	}
	return entries(rows), int(n), nil
}

// BlocklistChecksums returns the entries that block one of checksums, by
// ID.
func (db *DB) BlocklistChecksums(ctx context.Context, checksums []string) ([]BlocklistEntry, error) {
	if len(checksums) == 0 {
		return nil, nil
	}
	var rows []blocklistRow
	err := db.bun.NewSelect().Model(&rows).Where("checksum IN (?)", bun.List(checksums)).OrderExpr("id ASC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: blocklist checksums: %w", err)
	}
	return entries(rows), nil
}

// BlocklistHashes returns every perceptual-hash entry, by ID.
func (db *DB) BlocklistHashes(ctx context.Context) ([]BlocklistEntry, error) {
	var rows []blocklistRow
	err := db.bun.NewSelect().Model(&rows).Where("phash IS NOT NULL").OrderExpr("id ASC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: blocklist hashes: %w", err)
	}
	return entries(rows), nil
}

func entries(rows []blocklistRow) []BlocklistEntry {
	out := make([]BlocklistEntry, len(rows))
	for i, r := range rows {
		out[i] = r.entry()
	}
	return out
}

// BlocklistMatches returns a page of the stored images of every user that
// e blocks, and how many there are (Page.Hits): for a checksum the images
// whose checksum or original checksum it is, by user and identifier; for
// a hash those within its distance, nearest first (Image.Distance), as a
// similar-image listing finds them. limit 0 is every match.
func (db *DB) BlocklistMatches(ctx context.Context, e BlocklistEntry, page, limit int) (Page, error) {
	if e.HasPHash {
		return db.Images(ctx, Query{Page: page, Limit: limit, Similar: &Similarity{Hash: e.PHash, MaxDistance: e.Distance}})
	}
	if page < 0 || limit < 0 {
		return Page{}, fmt.Errorf("storage: blocklist matches: negative page or limit: %w", ErrInvalid)
	}
	where := func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("checksum = ? OR original_checksum = ?", e.Checksum, e.Checksum)
	}
	n, err := where(db.bun.NewSelect().Model((*imageRow)(nil))).Count(ctx)
	if err != nil {
		return Page{}, fmt.Errorf("storage: blocklist matches: %w", err)
	}
	var rows []imageRow
	q := where(db.bun.NewSelect().Model(&rows)).OrderExpr("user_name ASC, identifier ASC")
	if limit > 0 {
		q = q.Limit(int64(limit)).Offset(int64(max(page-1, 0) * limit))
	}
	if err := q.Scan(ctx); err != nil {
		return Page{}, fmt.Errorf("storage: blocklist matches: %w", err)
	}
	out := Page{Images: make([]Image, len(rows)), Hits: int(n)}
	for i := range rows {
		out.Images[i] = rows[i].image()
	}
	return out, nil
}
