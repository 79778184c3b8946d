package storage

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// Copy (vitrine copy) makes a store (database and blob store) a copy of
// another, while the source serves:
//
//   - a pass reads the source's rows at one moment (SQLite: a read
//     transaction on a connection of its own, which in WAL mode does not
//     hold back the writers; PostgreSQL and MySQL: a repeatable-read
//     transaction), compares them row by row with the target's (each
//     row's values normalized across dialects, sealed columns compared in
//     the clear and sealed again with the target's secret), writes what
//     differs, then copies every blob the target lacks, streamed and
//     checked by SHA-256 against a read-back;
//   - blob deletions are held on the source meanwhile (HoldBlobDeletions),
//     so every blob a pass's rows name is still there to copy;
//   - the first pass copies everything; a later one (a rerun, or the
//     catch-up) only what changed since, so a copy killed half-way goes on
//     where it was, copying nothing twice;
//   - with Cutover, the instances stop acknowledging writes (the write
//     pause, writepause.go), a last pass makes the target the source at
//     that moment (deleting what the source no longer has), a comparison
//     checks that nothing differs, and the source is marked moved: it
//     serves reads and refuses writes until its instances run on the copy.
//
// The row comparison holds one table at a time: the target's keys and
// hashes (about 100 bytes a row) and the source's rows that differ (on a
// first pass, all of that table's).

// CopyOptions are a copy's inputs besides the stores.
type CopyOptions struct {
	// Cutover ends the copy with the write pause and the last pass.
	Cutover bool
	// Target names the target in the source's mark ("moved to ...").
	Target string
	// PauseTimeout bounds the wait for the instances to stop their writes
	// (default 30s).
	PauseTimeout time.Duration
	// BytesPerSecond, when positive, throttles the blob copy.
	BytesPerSecond int64
	// Workers copy blobs at once (default 4).
	Workers int
	// TempDir holds the snapshot of an SQLite source in memory (default:
	// the system's).
	TempDir string
	// Progress, when set, is told how each phase advances.
	Progress func(phase string, done, total int64)
}

// CopyPass is what one pass changed on the target.
type CopyPass struct {
	Name        string  `json:"name"`
	Rows        int64   `json:"rows"`
	Inserted    int     `json:"inserted"`
	Updated     int     `json:"updated"`
	Deleted     int     `json:"deleted"`
	Blobs       int64   `json:"blobs"`
	CopiedBlobs int     `json:"copiedBlobs"`
	CopiedBytes int64   `json:"copiedBytes"`
	DeletedBlob int     `json:"deletedBlobs"`
	Seconds     float64 `json:"seconds"`
}

func (p CopyPass) changes() int {
	return p.Inserted + p.Updated + p.Deleted + p.CopiedBlobs + p.DeletedBlob
}

// CopyReport is what Copy did.
type CopyReport struct {
	Passes []CopyPass `json:"passes"`
	// PauseSeconds is how long the instances held writes (Cutover): from
	// the pause until the target held everything.
	PauseSeconds float64 `json:"pauseSeconds,omitempty"`
	// PauseWaitSeconds is the part of it spent waiting for the instances
	// to end the writes in flight.
	PauseWaitSeconds float64 `json:"pauseWaitSeconds,omitempty"`
	// Moved says the source was marked moved: it refuses writes.
	Moved bool `json:"moved"`
	// Compare is the check after the last pass: what still differs.
	Compare *CopyCompare `json:"compare,omitempty"`
	Seconds float64      `json:"seconds"`
	Failed  []string     `json:"failed,omitempty"`
	// Source and Target are the fsck of each store after the copy.
	Source *CheckReport `json:"source,omitempty"`
	Target *CheckReport `json:"target,omitempty"`
}

// CopyCompare is the comparison of the two stores after a cutover.
type CopyCompare struct {
	Rows         int64 `json:"rows"`
	RowsDiffer   int   `json:"rowsDiffer"`
	Blobs        int64 `json:"blobs"`
	BlobsDiffer  int   `json:"blobsDiffer"`
	BlobsSummed  int   `json:"blobsSummed"`
	SumsMismatch int   `json:"sumsMismatch"`
}

// Copy copies the store src (db and blobs) to dst, as the package comment
// above describes.
func Copy(ctx context.Context, src *DB, srcBlobs *Blobs, dst *DB, dstBlobs *Blobs, opts CopyOptions) (*CopyReport, error) {
	start := time.Now()
	r := &CopyReport{}
	if err := checkDistinct(ctx, src, srcBlobs, dst, dstBlobs); err != nil {
		return r, err
	}
	release, err := src.HoldBlobDeletions(ctx, time.Minute)
	if err != nil {
		return r, err
	}
	defer release()
	if err := copyPass(ctx, src, srcBlobs, dst, dstBlobs, "bulk", false, opts, r, nil); err != nil {
		return r, err
	}
	if opts.Cutover {
		// Catch up while the passes shrink (up to catchUps): the last
		// pass, under the pause, then has little left to write. A pass
		// reads both stores whole, so under a steady load they stop
		// shrinking soon.
		for i := 0; i < catchUps; i++ {
			if n := len(r.Passes); n > 1 && (r.Passes[n-1].changes() < catchUpSmall || 2*r.Passes[n-1].changes() > r.Passes[n-2].changes()) {
				break
			}
			if err := copyPass(ctx, src, srcBlobs, dst, dstBlobs, "catch-up", false, opts, r, nil); err != nil {
				return r, err
			}
		}
		if err := cutover(ctx, src, srcBlobs, dst, dstBlobs, opts, r); err != nil {
			return r, err
		}
	}
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// catchUps bounds the passes before a cutover's pause; a pass that wrote
// fewer than catchUpSmall changes ends them.
const (
	catchUps     = 3
	catchUpSmall = 200
)

// cutover pauses the source's writes and takes the last pass, at whose
// end the source is marked moved: the pause lasts the wait for the
// instances and that pass. The comparison follows on the same snapshot;
// when anything differs, the source takes writes again.
func cutover(ctx context.Context, src *DB, srcBlobs *Blobs, dst *DB, dstBlobs *Blobs, opts CopyOptions, r *CopyReport) error {
	p, err := src.PauseWrites(ctx, 15*time.Second)
	if err != nil {
		return err
	}
	paused := time.Now()
	wait := cmp.Or(opts.PauseTimeout, 30*time.Second)
	missing, err := p.Wait(ctx, wait)
	r.PauseWaitSeconds = time.Since(paused).Seconds()
	if err == nil && len(missing) > 0 {
		err = fmt.Errorf("storage: copy: instances that did not stop their writes within %s: %v (a write still in flight, or an instance stopped or stalled; its heartbeat expires 15s after the last): the source takes writes again; try again", wait, missing)
	}
	if err != nil {
		return errors.Join(err, p.Release(ctx))
	}
	err = copyPass(ctx, src, srcBlobs, dst, dstBlobs, "cutover", true, opts, r, func(conn bun.IDB, listed map[string]int64) error {
		if err := p.Moved(ctx, opts.Target); err != nil {
			return err
		}
		r.PauseSeconds, r.Moved = time.Since(paused).Seconds(), true
		// The comparison reads the same snapshot: the source's workers
		// write on during the pause (deliveries, usage), but no
		// acknowledged change.
		c, err := compareStores(ctx, conn, src, dst, srcBlobs, dstBlobs, listed)
		if err == nil && (c.RowsDiffer > 0 || c.BlobsDiffer > 0 || c.SumsMismatch > 0) {
			err = fmt.Errorf("storage: copy: the stores differ after the last pass (%d rows, %d blobs, %d checksums): the source takes writes again", c.RowsDiffer, c.BlobsDiffer, c.SumsMismatch)
		}
		r.Compare = c
		if err != nil {
			r.Moved = false
			return errors.Join(err, src.ReleaseWrites(context.WithoutCancel(ctx)))
		}
		return nil
	})
	if err != nil && !r.Moved {
		return errors.Join(err, p.Release(ctx))
	}
	return err
}

// checkDistinct refuses a copy onto its own source: a probe row and blob
// written to the source must not show on the target.
func checkDistinct(ctx context.Context, src *DB, srcBlobs *Blobs, dst *DB, dstBlobs *Blobs) error {
	if err := sameSchema(ctx, src, dst); err != nil {
		return err
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	probe := "copy/probe-" + hex.EncodeToString(b)
	if err := src.setState(ctx, probe, "", time.Now().Add(time.Minute)); err != nil {
		return err
	}
	defer src.dropState(context.WithoutCancel(ctx), probe)
	n, err := dst.bun.NewSelect().Model((*stateRow)(nil)).Where("name = ?", probe).Count(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("storage: copy: the target's database is the source's: %w", ErrInvalid)
	}
	if err := srcBlobs.Put(ctx, probe, []byte("probe")); err != nil {
		return err
	}
	defer srcBlobs.Delete(context.WithoutCancel(ctx), probe)
	if ok, err := dstBlobs.Exists(ctx, probe); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("storage: copy: the target's blob store is the source's: %w", ErrInvalid)
	}
	return nil
}

// sourceSnapshot opens the source's rows at one moment; done closes it.
func sourceSnapshot(ctx context.Context, src *DB, tmpDir string) (conn bun.IDB, done func(), err error) {
	switch {
	case src.file != "":
		return readSQLite(ctx, src.file)
	case src.kind == sqliteKind: // in memory: a copy
		dir, err := os.MkdirTemp(tmpDir, "vitrine-copy-")
		if err != nil {
			return nil, nil, err
		}
		snap, err := snapshotSQLite(ctx, src, dir)
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		return snap, func() { snap.Close(); os.RemoveAll(dir) }, nil
	}
	tx, err := src.bun.BeginTx(unbounded(ctx), &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	// The first read fixes the transaction's snapshot (PostgreSQL's, and
	// MySQL's read view): now, not at the first table copied.
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil {
		_ = tx.Rollback()
		return nil, nil, err
	}
	return tx, func() { _ = tx.Rollback() }, nil
}

// copyPass is one pass: the rows, then the blobs; final deletes from the
// target what the source does not have. then, when set, runs at the end
// with the pass's snapshot and the blobs it listed.
func copyPass(ctx context.Context, src *DB, srcBlobs *Blobs, dst *DB, dstBlobs *Blobs, name string, final bool, opts CopyOptions, r *CopyReport,
	then func(conn bun.IDB, listed map[string]int64) error) error {
	start := time.Now()
	p := CopyPass{Name: name}
	conn, done, err := sourceSnapshot(ctx, src, opts.TempDir)
	if err != nil {
		return fmt.Errorf("storage: copy: %w", err)
	}
	defer done()
	if err := syncTables(ctx, conn, src, dst, &p, opts.Progress); err != nil {
		return fmt.Errorf("storage: copy: %w", err)
	}
	listed, err := syncBlobs(ctx, srcBlobs, dstBlobs, final, opts, &p, r)
	if err != nil {
		return fmt.Errorf("storage: copy: %w", err)
	}
	p.Seconds = time.Since(start).Seconds()
	r.Passes = append(r.Passes, p)
	if len(r.Failed) > 0 {
		return fmt.Errorf("storage: copy: %d blobs not copied", len(r.Failed))
	}
	if then != nil {
		return then(conn, listed)
	}
	return nil
}

// syncBlobs copies every blob of src that dst lacks (or holds with
// another size); final also deletes dst's blobs that src does not have.
func syncBlobs(ctx context.Context, src, dst *Blobs, final bool, opts CopyOptions, p *CopyPass, r *CopyReport) (listed map[string]int64, err error) {
	have := map[string]int64{}
	if err := dst.List(ctx, "", func(o BlobInfo) error { have[o.Key] = o.Size; return nil }); err != nil {
		return nil, err
	}
	listed = map[string]int64{}
	jobs := make(chan BlobInfo)
	var mu sync.Mutex
	var wg sync.WaitGroup
	throttle := newThrottle(opts.BytesPerSecond)
	for range cmp.Or(opts.Workers, 4) {
		wg.Go(func() {
			for o := range jobs {
				n, err := copyBlob(ctx, src, dst, o.Key, throttle)
				mu.Lock()
				switch {
				case errors.Is(err, ErrNotExist): // gone since the listing: no row names it
				case err != nil:
					r.Failed = append(r.Failed, fmt.Sprintf("%s: %v", o.Key, err))
				default:
					p.CopiedBlobs++
					p.CopiedBytes += n
				}
				if opts.Progress != nil {
					opts.Progress("blobs", int64(p.CopiedBlobs), 0)
				}
				mu.Unlock()
			}
		})
	}
	err = src.List(ctx, "", func(o BlobInfo) error {
		p.Blobs++
		listed[o.Key] = o.Size
		size, ok := have[o.Key]
		delete(have, o.Key)
		if ok && size == o.Size {
			return nil
		}
		select {
		case jobs <- o:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(jobs)
	wg.Wait()
	if err != nil || !final {
		return listed, err
	}
	for key := range have {
		if err := dst.Delete(ctx, key); err != nil && !errors.Is(err, ErrNotExist) {
			return nil, err
		}
		p.DeletedBlob++
	}
	return listed, nil
}

// compareSample is how many blobs a comparison reads on both sides.
const compareSample = 200

// compareStores compares the target with the source's snapshot conn and
// the blobs listed in the last pass: the rows, the blobs' keys and
// sizes, and the SHA-256 of a sample of blobs on both sides.
func compareStores(ctx context.Context, conn bun.IDB, src, dst *DB, srcBlobs, dstBlobs *Blobs, listed map[string]int64) (*CopyCompare, error) {
	c := &CopyCompare{Blobs: int64(len(listed))}
	diffs, err := diffTables(ctx, conn, src, dst)
	if err != nil {
		return nil, err
	}
	for _, d := range diffs {
		c.Rows += d.rows
		c.RowsDiffer += d.changes()
	}
	seen := 0
	err = dstBlobs.List(ctx, "", func(o BlobInfo) error {
		size, ok := listed[o.Key]
		if !ok || size != o.Size {
			c.BlobsDiffer++
			return nil
		}
		seen++
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.BlobsDiffer += len(listed) - seen
	for key := range listed { // map order: a sample that differs run to run
		if c.BlobsSummed == compareSample {
			break
		}
		a, err := blobSum(ctx, srcBlobs, key)
		if errors.Is(err, ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		b, err := blobSum(ctx, dstBlobs, key)
		if err != nil && !errors.Is(err, ErrNotExist) {
			return nil, err
		}
		c.BlobsSummed++
		if a != b {
			c.SumsMismatch++
		}
	}
	return c, nil
}

// copyBlob streams the blob at key from src to dst, then reads it back
// and compares its SHA-256 with what was read.
func copyBlob(ctx context.Context, src, dst *Blobs, key string, t *throttle) (int64, error) {
	rc, err := src.Open(ctx, key)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(rc, h), t: t}
	if err := dst.PutFrom(ctx, key, cr); err != nil {
		return 0, err
	}
	got, err := blobSum(ctx, dst, key)
	if err != nil {
		return 0, err
	}
	if want := hex.EncodeToString(h.Sum(nil)); got != want {
		return 0, fmt.Errorf("read back with SHA-256 %s, copied %s", got, want)
	}
	return cr.n, nil
}

// blobSum is the SHA-256 of the blob at key, streamed.
func blobSum(ctx context.Context, b *Blobs, key string) (string, error) {
	rc, err := b.Open(ctx, key)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// countingReader counts what it reads and waits on its throttle.
type countingReader struct {
	r io.Reader
	n int64
	t *throttle
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	c.t.wait(n)
	return n, err
}

// throttle spaces reads to a rate in bytes per second (shared by the
// workers); nil or a zero rate does not wait.
type throttle struct {
	mu   sync.Mutex
	rate int64
	next time.Time
}

func newThrottle(rate int64) *throttle {
	if rate <= 0 {
		return nil
	}
	return &throttle{rate: rate, next: time.Now()}
}

func (t *throttle) wait(n int) {
	if t == nil || n == 0 {
		return
	}
	t.mu.Lock()
	now := time.Now()
	if t.next.Before(now) {
		t.next = now
	}
	t.next = t.next.Add(time.Duration(int64(n) * int64(time.Second) / t.rate))
	d := t.next.Sub(now)
	t.mu.Unlock()
	time.Sleep(d)
}
