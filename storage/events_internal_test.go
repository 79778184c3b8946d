package storage

import (
	"context"
	"errors"
	"testing"

	"github.com/uptrace/bun"
)

// TestEventRolledBack checks that the event of a change whose transaction
// rolls back after its audit entry was written goes with it: a change
// that does not commit is never announced.
func TestEventRolledBack(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, "sqlite::memory:", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetEvents(true)
	boom := errors.New("a later statement failed")
	cases := []struct {
		name   string
		commit bool
		want   int
	}{
		{"rolled back", false, 0},
		{"committed", true, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				if err := db.audit(ctx, tx, auditEvent{action: "key.create", target: c.name}); err != nil {
					return err
				}
				if !c.commit {
					return boom
				}
				return nil
			})
			if c.commit != (err == nil) {
				t.Fatal(err)
			}
			events, err := db.PendingEvents(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != c.want {
				t.Fatalf("%d events, want %d: %+v", len(events), c.want, events)
			}
		})
	}
}
