package storage

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/uptrace/bun"
)

// Erasing a user (migration step 21) removes everything the service holds
// of them, in the background and resumably: RequestErasure writes an
// erasures row, and any instance takes it a step at a time (EraseStep,
// erasure_step.go): a batch of images per transaction (their rows and
// those of every image part, their blobs queued in blob_queue, the
// receipt's items), then the rows left of the user's images, then a wait
// until the user's blobs are gone from the store, then one transaction
// that erases the user's own rows (userParts), writes the user.erase
// audit entry and event, and marks the erasure done. A step that is cut
// off commits nothing, so an erasure resumes where its last committed step
// left it. While a user is being erased, CommitImage refuses the user's
// new images (ErrErasing).

// ErrErasing: the user is being erased; a new image is refused until the
// erasure is done (409).
var ErrErasing = &Error{"storage: user is being erased", http.StatusConflict, "The user is being erased"}

// Erasing is ErrErasing for user (errors.Is(err, ErrErasing) holds): its
// public message names the user and says what to do, the one the API
// answers whether its own check or the image's transaction refused.
func Erasing(user string) error { return erasingError{user} }

type erasingError struct{ user string }

func (e erasingError) Error() string        { return "storage: user " + e.user + " is being erased" }
func (e erasingError) HTTPStatus() int      { return http.StatusConflict }
func (e erasingError) Is(target error) bool { return target == ErrErasing }
func (e erasingError) PublicMessage() string {
	return fmt.Sprintf("User '%s' is being erased; try again once the erasure is done", e.user)
}

// ErasureState is where an erasure is.
type ErasureState string

// The states of an erasure.
const (
	ErasurePending ErasureState = "pending" // requested, not yet taken
	ErasureRunning ErasureState = "running" // taken at least once
	ErasureDone    ErasureState = "done"    // finished: nothing of the user is left
)

// The phases of a running erasure (Erasure.Phase).
const (
	phaseImages = "images" // erasing the images a batch at a time
	phaseBlobs  = "blobs"  // waiting for the user's blobs to be deleted
	phaseDone   = "done"
)

// Erasure is one erasure of a user.
type Erasure struct {
	ID    int64
	User  string
	State ErasureState
	// Phase is images (rows going a batch at a time), blobs (waiting for
	// the blob queue to delete the user's blobs) or done.
	Phase string
	// Actor and Addr are who asked (the public key and client address of
	// the request).
	Actor, Addr string
	// Requested is when it was asked for; Started when an instance first
	// took it, Finished when it was done (zero until then).
	Requested, Started, Finished time.Time
	// Counts is what went so far, per kind: images and imageBytes, every
	// image part (metadata, properties, shortUrls, variants, variations,
	// variationJobs), every user part (imageCounts, usageCounters,
	// webhooks, deliveries and events: those of the user's images and
	// tokens, unsent or logged), blobs (deletions queued) and strayBlobs (blobs of the
	// user that no row named, found in the store and queued).
	Counts map[string]int64
	// Failures counts the failed steps since the last one that worked,
	// LastError is the last one's error.
	Failures  int
	LastError string
	// ReceiptSHA256 is the SHA-256 of the receipt (WriteReceipt) once
	// done, in hex; the user.erase audit entry records it too.
	ReceiptSHA256 string
}

// erasureRow is the erasures table.
type erasureRow struct {
	bun.BaseModel `bun:"table:erasures"`

	ID            int64          `bun:"id,pk,autoincrement"`
	User          string         `bun:"user_name"`
	Active        sql.NullString `bun:"active"` // the user while unfinished
	Actor         string         `bun:"actor"`
	Addr          string         `bun:"addr"`
	Requested     int64          `bun:"requested"` // unix microseconds
	Started       int64          `bun:"started"`
	Finished      int64          `bun:"finished"`
	Phase         string         `bun:"phase"`
	Counts        string         `bun:"counts"` // JSON object
	Due           int64          `bun:"due"`
	Claim         int64          `bun:"claim"` // raised by every take
	Failures      int            `bun:"failures"`
	LastError     string         `bun:"last_error"`
	ReceiptSHA256 string         `bun:"receipt_sha256"`
}

// erasureItemRow is the erasure_items table: one image an erasure erased.
type erasureItemRow struct {
	bun.BaseModel `bun:"table:erasure_items"`

	Erasure          int64  `bun:"erasure_id,pk"`
	Identifier       string `bun:"identifier,pk"`
	Checksum         string `bun:"checksum"`
	OriginalChecksum string `bun:"original_checksum"`
	Size             int64  `bun:"size"`
	Extension        string `bun:"extension"`
	Width            int    `bun:"width"`
	Height           int    `bun:"height"`
	Added            int64  `bun:"added"`
}

func (r *erasureRow) counts() (map[string]int64, error) {
	c := map[string]int64{}
	if err := json.Unmarshal([]byte(r.Counts), &c); err != nil {
		return nil, fmt.Errorf("erasure %d counts: %w", r.ID, err)
	}
	return c, nil
}

func (r *erasureRow) erasure() (Erasure, error) {
	c, err := r.counts()
	if err != nil {
		return Erasure{}, err
	}
	e := Erasure{ID: r.ID, User: r.User, Phase: r.Phase, Actor: r.Actor, Addr: r.Addr,
		Requested: time.UnixMicro(r.Requested).UTC(), Started: createdTime(r.Started), Finished: createdTime(r.Finished),
		Counts: c, Failures: r.Failures, LastError: r.LastError, ReceiptSHA256: r.ReceiptSHA256}
	switch {
	case r.Finished != 0:
		e.State = ErasureDone
	case r.Started != 0:
		e.State = ErasureRunning
	default:
		e.State = ErasurePending
	}
	return e, nil
}

// RequestErasure asks for user to be erased, as done by ctx's actor. When
// an erasure of user is under way, it returns that one (created false):
// asking twice starts one erasure. Otherwise, when the database holds
// anything of user, it writes a new erasure, pending (created true);
// when it holds nothing, it returns user's latest finished erasure
// (created false), or ErrNotExist when user was never erased.
func (db *DB) RequestErasure(ctx context.Context, user string) (e Erasure, created bool, err error) {
	if err := checkLen("user", user, maxName, true); err != nil {
		return Erasure{}, false, err
	}
	if e, err := db.activeErasure(ctx, user); err == nil || !errors.Is(err, ErrNotExist) {
		return e, false, err
	}
	data, err := db.userData(ctx, db.bun, user)
	if err != nil {
		return Erasure{}, false, fmt.Errorf("storage: erase %s: %w", user, err)
	}
	has := false
	for _, n := range data {
		has = has || n > 0
	}
	if !has {
		e, err := db.LatestErasure(ctx, user, true)
		return e, false, err
	}
	a, t := ActorFrom(ctx), time.Now().UnixMicro()
	row := &erasureRow{User: user, Active: sql.NullString{String: user, Valid: true}, Actor: clip(a.Key, maxName),
		Addr: clip(a.Addr, 64), Requested: t, Phase: phaseImages, Counts: "{}", Due: t}
	err = db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// Why through the user's image count: every new image of user
		// commits through that row (addCount) and then checks for an
		// erasure (refuseErasing), so an image committing now either
		// commits first, and is erased, or waits for this one and is
		// refused.
		if err := db.addCount(ctx, tx, user, 0, 0); err != nil {
			return err
		}
		res, err := db.insertIgnore(tx.NewInsert().Model(row), "active").Exec(ctx)
		if err != nil {
			return err
		}
		n, err := affected(res)
		created = n == 1
		return err
	})
	if err != nil {
		return Erasure{}, false, fmt.Errorf("storage: erase %s: %w", user, err)
	}
	if !created {
		e, err := db.activeErasure(ctx, user)
		return e, false, err
	}
	e, err = row.erasure()
	return e, true, err
}

// activeErasure returns user's unfinished erasure; ErrNotExist when there
// is none.
func (db *DB) activeErasure(ctx context.Context, user string) (Erasure, error) {
	var row erasureRow
	err := db.bun.NewSelect().Model(&row).Where("active = ?", user).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Erasure{}, fmt.Errorf("storage: erasure of %s: %w", user, ErrNotExist)
	}
	if err != nil {
		return Erasure{}, fmt.Errorf("storage: erasure of %s: %w", user, err)
	}
	return row.erasure()
}

// LatestErasure returns user's latest erasure, or with finished its
// latest finished one; ErrNotExist when there is none.
func (db *DB) LatestErasure(ctx context.Context, user string, finished bool) (Erasure, error) {
	var row erasureRow
	q := db.bun.NewSelect().Model(&row).Where("user_name = ?", user)
	if finished {
		q = q.Where("finished <> 0")
	}
	err := q.OrderExpr("id DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Erasure{}, fmt.Errorf("storage: erasure of %s: %w", user, ErrNotExist)
	}
	if err != nil {
		return Erasure{}, fmt.Errorf("storage: erasure of %s: %w", user, err)
	}
	return row.erasure()
}

// Erasing reports whether user is being erased.
func (db *DB) Erasing(ctx context.Context, user string) (bool, error) {
	n, err := db.bun.NewSelect().Model((*erasureRow)(nil)).Where("active = ?", user).Count(ctx)
	if err != nil {
		return false, fmt.Errorf("storage: erasure of %s: %w", user, err)
	}
	return n > 0, nil
}

// refuseErasing fails tx, the commit of a new image of user, with
// ErrErasing while user is being erased. The caller has taken user's
// image count row (addCount), which RequestErasure takes too. Why a plain
// read: the erasure row is committed before this transaction could see
// it, and a lock on it would wait for the erasure's own steps.
func (db *DB) refuseErasing(ctx context.Context, tx bun.Tx, user string) error {
	n, err := tx.NewSelect().Model((*erasureRow)(nil)).Where("active = ?", user).Count(ctx)
	if err != nil {
		return fmt.Errorf("erasure of %s: %w", user, err)
	}
	if n > 0 {
		return Erasing(user)
	}
	return nil
}

// WriteReceipt writes the receipt of user's latest finished erasure to w:
// a JSON object with the erasure's id, the user, who asked
// (requestedBy), when it was requested, started and finished (RFC 3339),
// its counts, and every image it erased, by identifier ({imageIdentifier,
// checksum, originalChecksum, size, extension, width, height, added}).
// Its SHA-256 is the erasure's ReceiptSHA256. ErrNotExist when user has
// no finished erasure. It reads the images a page at a time.
func (db *DB) WriteReceipt(ctx context.Context, w io.Writer, user string) error {
	var row erasureRow
	err := db.bun.NewSelect().Model(&row).Where("user_name = ? AND finished <> 0", user).
		OrderExpr("id DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("storage: receipt of %s: %w", user, ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("storage: receipt of %s: %w", user, err)
	}
	if err := writeReceipt(ctx, db.bun, w, &row); err != nil {
		return fmt.Errorf("storage: receipt of %s: %w", user, err)
	}
	return nil
}

// receiptPage is how many images writeReceipt reads at a time.
const receiptPage = 1000

// writeReceipt writes e's receipt through idb to w. The same rows give
// the same bytes: the receipt's hash, taken when the erasure finishes,
// stays its proof.
func writeReceipt(ctx context.Context, idb bun.IDB, w io.Writer, e *erasureRow) error {
	counts, err := e.counts()
	if err != nil {
		return err
	}
	stamp := func(v int64) string { return time.UnixMicro(v).UTC().Format(time.RFC3339Nano) }
	head, err := json.Marshal(struct {
		Erasure     int64            `json:"erasure"`
		User        string           `json:"user"`
		RequestedBy string           `json:"requestedBy"`
		Requested   string           `json:"requested"`
		Started     string           `json:"started"`
		Finished    string           `json:"finished"`
		Counts      map[string]int64 `json:"counts"`
	}{e.ID, e.User, e.Actor, stamp(e.Requested), stamp(e.Started), stamp(e.Finished), counts})
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	bw.Write(head[:len(head)-1])
	bw.WriteString(`,"images":[`)
	last, first := "", true
	for {
		var items []erasureItemRow
		q := idb.NewSelect().Model(&items).Where("erasure_id = ?", e.ID)
		if !first {
			q = q.Where("identifier > ?", last)
		}
		if err := q.Order("identifier").Limit(receiptPage).Scan(ctx); err != nil {
			return err
		}
		for _, it := range items {
			b, err := json.Marshal(struct {
				ID               string `json:"imageIdentifier"`
				Checksum         string `json:"checksum"`
				OriginalChecksum string `json:"originalChecksum"`
				Size             int64  `json:"size"`
				Extension        string `json:"extension"`
				Width            int    `json:"width"`
				Height           int    `json:"height"`
				Added            string `json:"added"`
			}{it.Identifier, it.Checksum, it.OriginalChecksum, it.Size, it.Extension, it.Width, it.Height, stamp(it.Added)})
			if err != nil {
				return err
			}
			if !first {
				bw.WriteByte(',')
			}
			first = false
			bw.Write(b)
			last = it.Identifier
		}
		if len(items) < receiptPage {
			break
		}
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// receiptHash is the SHA-256 of e's receipt, in hex.
func receiptHash(ctx context.Context, idb bun.IDB, e *erasureRow) (string, error) {
	h := sha256.New()
	if err := writeReceipt(ctx, idb, h, e); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
