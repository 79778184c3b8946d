package storagetest

import (
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// testUsage checks that counts add up per day, metric and label across
// flushes and concurrent writers, and that Last keeps the latest flush.
func testUsage(t *testing.T, db *storage.DB) {
	t1 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	err := db.AddUsage(ctx(t), []storage.UsageCount{
		{Day: "2026-01-02", Metric: "key.requests", Label: "admin", Value: 3, Last: t2},
		{Day: "2026-01-01", Metric: "key.requests", Label: "admin", Value: 1, Last: t1},
		{Day: "2026-01-02", Metric: "requests", Label: "200", Value: 5, Last: t1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddUsage(ctx(t), []storage.UsageCount{{Day: "2026-01-02", Metric: "key.requests", Label: "admin", Value: 4, Last: t1}}); err != nil {
		t.Fatal(err)
	}
	got, err := db.UsageSince(ctx(t), "key.requests", "2026-01-02")
	if err != nil || len(got) != 1 || got[0].Value != 7 || !got[0].Last.Equal(t2) {
		t.Fatalf("UsageSince = %+v, %v; want one row of 7 last used %v", got, err, t2)
	}
	u := storage.NewUsage(db, storage.UsageConfig{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				u.Add(storage.MetricRequests, "404", 1)
			}
		}()
	}
	wg.Wait()
	if err := u.Flush(ctx(t)); err != nil {
		t.Fatal(err)
	}
	u.Add(storage.MetricRequests, "404", 1)
	if err := u.Flush(ctx(t)); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	got, err = db.UsageSince(ctx(t), storage.MetricRequests, today)
	if err != nil || len(got) != 1 || got[0].Label != "404" || got[0].Value != 801 {
		t.Fatalf("after flushes: %+v, %v; want 404 counted 801 times", got, err)
	}
}
