package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// The write pause is how `vitrine copy --cutover` stops the instances of a
// store from acknowledging writes while it takes the copy's last pass:
//
//   - every instance writes a heartbeat (instances/<name>, with an expiry)
//     and polls WriteState;
//   - the copy writes writes/pause (PauseWrites); an instance that sees it
//     stops admitting writes, waits for those in flight and acknowledges
//     (acks/<pause>/<name>); the copy waits for every live instance;
//   - at the end the copy marks the store moved (writes/moved, no expiry):
//     the instances keep serving reads and refuse writes until they
//     restart on the copy; or it releases the pause and writes go on.
//
// A pause whose copy died expires after its lease, as a hold does.

const (
	statePause    = "writes/pause"
	stateMoved    = "writes/moved"
	stateInstance = "instances/"
	stateAck      = "acks/"
)

// stateRow is one row of store_state; Expires is Unix microseconds, 0 for
// never.
type stateRow struct {
	bun.BaseModel `bun:"table:store_state"`
	Name          string `bun:"name,pk"`
	Value         string `bun:"value"`
	Expires       int64  `bun:"expires"`
}

// WriteState is what the instances of a store may write.
type WriteState struct {
	// Pause is the pause in force, empty when none.
	Pause string
	// Moved, when set, says where the store was copied to: it takes no
	// more writes.
	Moved string
}

// WriteState reads the store's write state.
func (db *DB) WriteState(ctx context.Context) (WriteState, error) {
	var rows []stateRow
	err := db.bun.NewSelect().Model(&rows).Where("name IN (?, ?)", statePause, stateMoved).
		Where("expires = 0 OR expires > ?", time.Now().UnixMicro()).Scan(ctx)
	var s WriteState
	for _, r := range rows {
		if r.Name == statePause {
			s.Pause = r.Value
		} else {
			s.Moved = r.Value
		}
	}
	return s, err
}

// setState writes the row name; expires is zero for never.
func (db *DB) setState(ctx context.Context, name, value string, expires time.Time) error {
	row := stateRow{Name: name, Value: value}
	if !expires.IsZero() {
		row.Expires = expires.UnixMicro()
	}
	// Each row has one writer (an instance its own, the copy the pause),
	// so update-then-insert does not race.
	res, err := db.bun.NewUpdate().Model(&row).Column("value", "expires").WherePK().Exec(ctx)
	if err == nil {
		if n, _ := res.RowsAffected(); n == 0 {
			_, err = db.bun.NewInsert().Model(&row).Exec(ctx)
		}
	}
	if err != nil {
		return fmt.Errorf("storage: write %s: %w", name, err)
	}
	return nil
}

func (db *DB) dropState(ctx context.Context, names ...string) error {
	_, err := db.bun.NewDelete().Model((*stateRow)(nil)).Where("name IN (?)", bun.List(names)).Exec(ctx)
	return err
}

// Heartbeat says that instance serves this store, for lease.
func (db *DB) Heartbeat(ctx context.Context, instance string, lease time.Duration) error {
	return db.setState(ctx, stateInstance+instance, "", time.Now().Add(lease))
}

// Leave removes instance's heartbeat: it serves no more.
func (db *DB) Leave(ctx context.Context, instance string) error {
	return db.dropState(ctx, stateInstance+instance)
}

// AckPause says that instance admits no write under pause and has none in
// flight.
func (db *DB) AckPause(ctx context.Context, pause, instance string) error {
	return db.setState(ctx, stateAck+pause+"/"+instance, "", time.Now().Add(10*time.Minute))
}

// ReleaseWrites ends a pause and the mark of a moved store: the instances
// take writes again.
func (db *DB) ReleaseWrites(ctx context.Context) error {
	return db.dropState(ctx, statePause, stateMoved)
}

// WritePause is a pause in force (PauseWrites).
type WritePause struct {
	ID   string
	db   *DB
	stop func()
}

// PauseWrites asks every instance to stop taking writes; the pause lasts
// until Release or Moved, or lease after the caller's last renewal.
func (db *DB) PauseWrites(ctx context.Context, lease time.Duration) (*WritePause, error) {
	s, err := db.WriteState(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: pause writes: %w", err)
	}
	if s.Moved != "" {
		return nil, fmt.Errorf("storage: pause writes: this store was moved already (%s); vitrine copy --release takes it back: %w", s.Moved, ErrInvalid)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	p := &WritePause{ID: hex.EncodeToString(b), db: db}
	if err := db.setState(ctx, statePause, p.ID, time.Now().Add(lease)); err != nil {
		return nil, err
	}
	p.stop = renewing(lease/3, func() {
		_ = db.setState(context.WithoutCancel(ctx), statePause, p.ID, time.Now().Add(lease))
	})
	return p, nil
}

// renewing calls renew every period until stop, which waits for the
// last call to end (and may be called more than once).
func renewing(period time.Duration, renew func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				renew()
			}
		}
	})
	return sync.OnceFunc(func() { close(done); wg.Wait() })
}

// Wait returns once every instance live at the first look (or since) has
// acknowledged the pause, or when timeout has passed: missing then names
// those that have not. One that stops renewing its heartbeat meanwhile
// (stopped, or stalled with a write in flight) stays missing: the pause
// cannot know whether it will still finish that write.
func (p *WritePause) Wait(ctx context.Context, timeout time.Duration) (missing []string, err error) {
	end := time.Now().Add(timeout)
	waiting := map[string]bool{}
	for {
		var rows []stateRow
		err := p.db.bun.NewSelect().Model(&rows).
			Where("(name LIKE ? AND expires > ?) OR name LIKE ?", stateInstance+"%", time.Now().UnixMicro(), stateAck+p.ID+"/%").
			Scan(ctx)
		if err != nil {
			return nil, fmt.Errorf("storage: wait for the instances: %w", err)
		}
		for _, r := range rows {
			if inst, ok := strings.CutPrefix(r.Name, stateInstance); ok {
				waiting[inst] = true
			}
		}
		for _, r := range rows {
			if inst, ok := strings.CutPrefix(r.Name, stateAck+p.ID+"/"); ok {
				delete(waiting, inst)
			}
		}
		if len(waiting) == 0 || time.Now().After(end) {
			missing = missing[:0]
			for inst := range waiting {
				missing = append(missing, inst)
			}
			slices.Sort(missing)
			return missing, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Moved marks the store as moved to to, for good (ReleaseWrites undoes
// it), and ends the pause.
func (p *WritePause) Moved(ctx context.Context, to string) error {
	p.stop()
	if err := p.db.setState(ctx, stateMoved, to, time.Time{}); err != nil {
		return err
	}
	return p.drop(ctx)
}

// Release ends the pause: the instances take writes again.
func (p *WritePause) Release(ctx context.Context) error {
	p.stop()
	return p.drop(ctx)
}

func (p *WritePause) drop(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	if _, err := p.db.bun.NewDelete().Model((*stateRow)(nil)).Where("name LIKE ?", stateAck+p.ID+"/%").Exec(ctx); err != nil {
		return err
	}
	return p.db.dropState(ctx, statePause)
}
