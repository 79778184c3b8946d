package storage

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"
)

// TestTxRetryDeadlock makes two transactions lock two rows in opposite
// orders on PostgreSQL and MariaDB, so that the database kills one as a
// deadlock's victim: runTx runs it again, both changes land, and the
// retry is counted. (SQLite takes its write lock when a transaction
// begins, so its writers queue and never deadlock; its busy answer is
// retried the same way.)
func TestTxRetryDeadlock(t *testing.T) {
	for _, c := range []struct{ name, env, example string }{
		{"postgres", "VITRINE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"},
		{"mysql", "VITRINE_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := os.Getenv(c.env)
			if dsn == "" {
				t.Skip("set " + c.env + "=" + c.example + " to run")
			}
			ctx := context.Background()
			db, err := Open(ctx, dsn, Options{SkipMigrate: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			table := fmt.Sprintf("tx_retry_%d", time.Now().UnixNano())
			if _, err := db.bun.ExecContext(ctx, "CREATE TABLE "+table+" (id INT PRIMARY KEY, n INT NOT NULL)"); err != nil {
				t.Fatal(err)
			}
			defer db.bun.ExecContext(context.Background(), "DROP TABLE "+table)
			if _, err := db.bun.ExecContext(ctx, "INSERT INTO "+table+" (id, n) VALUES (1, 0), (2, 0)"); err != nil {
				t.Fatal(err)
			}
			var both, wg sync.WaitGroup
			both.Add(2)
			errs := make([]error, 2)
			for i, order := range [][2]int{{1, 2}, {2, 1}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					run := 0
					errs[i] = db.runTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
						run++
						if _, err := tx.ExecContext(ctx, "UPDATE "+table+" SET n = n + 1 WHERE id = ?", order[0]); err != nil {
							return err
						}
						if run == 1 {
							both.Done()
							both.Wait() // each holds one row and asks for the other's
						}
						_, err := tx.ExecContext(ctx, "UPDATE "+table+" SET n = n + 1 WHERE id = ?", order[1])
						return err
					})
				}()
			}
			wg.Wait()
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("transactions: %v, %v", errs[0], errs[1])
			}
			var ns []int
			if err := db.bun.NewSelect().Table(table).Column("n").Order("id").Scan(ctx, &ns); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(ns) != "[2 2]" || db.TxRetries() < 1 {
				t.Fatalf("rows %v after %d retries; want [2 2] after at least one", ns, db.TxRetries())
			}
		})
	}
}
