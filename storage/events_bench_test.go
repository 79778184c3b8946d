package storage_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/storage/storagetest"
)

// BenchmarkDrainEvents drains 1,000 events to a deliverer that does
// nothing, on SQLite and (with VITRINE_TEST_POSTGRES) PostgreSQL: spread
// over 100 subjects, and all of one subject (whose events go one per
// query, each waiting for the one before). It reports events/s.
//
//	go test ./storage -run '^$' -bench BenchmarkDrainEvents -benchtime 5x
func BenchmarkDrainEvents(b *testing.B) {
	backends := map[string]func(b *testing.B) string{
		"sqlite": func(b *testing.B) string { return "sqlite://" + filepath.Join(b.TempDir(), "bench.db") },
	}
	if os.Getenv("VITRINE_TEST_POSTGRES") != "" {
		backends["postgres"] = func(b *testing.B) string { return storagetest.PostgresDSN(b) }
	}
	const events = 1000
	for _, name := range []string{"sqlite", "postgres"} {
		fresh, ok := backends[name]
		if !ok {
			continue
		}
		for _, subjects := range []int{100, 1} {
			b.Run(fmt.Sprintf("%s/subjects=%d", name, subjects), func(b *testing.B) {
				ctx := context.Background()
				db, err := storage.Open(ctx, fresh(b), storage.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				db.SetEvents(true)
				pass := storage.JobPass{RetryMin: time.Minute, RetryMax: time.Minute}
				var spent time.Duration
				for b.Loop() {
					b.StopTimer()
					for i := range events {
						if err := db.RecordAudit(ctx, "group.delete", fmt.Sprint("g", i%subjects), nil); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					start := time.Now()
					n, err := db.DrainEvents(ctx, pass, func(context.Context, storage.Event) error { return nil })
					spent += time.Since(start)
					if err != nil || n != events {
						b.Fatalf("drained %d, %v", n, err)
					}
				}
				b.ReportMetric(float64(events*b.N)/spent.Seconds(), "events/s")
			})
		}
	}
}
