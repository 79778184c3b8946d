package storage_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/storage/storagetest"
)

// BenchmarkList lists 20 images of a user holding 100,000 (beside another
// user's 20,000), sorted by each sortable field and filtered by ids and
// checksums, on SQLite and (with VITRINE_TEST_POSTGRES) PostgreSQL. Each
// case reports the median and 99th percentile of one listing (page and
// count) as p50-ms and p99-ms.
//
//	go test ./storage -run '^$' -bench BenchmarkList -benchtime 200x
func BenchmarkList(b *testing.B) {
	backends := map[string]func(b *testing.B) string{
		"sqlite": func(b *testing.B) string { return "sqlite://" + filepath.Join(b.TempDir(), "bench.db") },
	}
	if os.Getenv("VITRINE_TEST_POSTGRES") != "" {
		backends["postgres"] = func(b *testing.B) string { return storagetest.PostgresDSN(b) }
	}
	for _, name := range []string{"sqlite", "postgres"} {
		fresh, ok := backends[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			db, err := storage.Open(ctx, fresh(b), storage.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			seed(b, db, "big", 100_000)
			seed(b, db, "other", 20_000)
			if name == "postgres" {
				if _, err := db.SQL().Exec("ANALYZE images"); err != nil {
					b.Fatal(err)
				}
			}
			var ids, sums []string
			for i := 0; i < 20; i++ {
				n := i * 4999
				ids = append(ids, fmt.Sprintf("id%07d", n))
				sums = append(sums, fmt.Sprintf("sum%07d", n))
			}
			cases := []struct {
				name string
				q    storage.Query
			}{
				{"ids", storage.Query{IDs: ids}},
				{"checksums", storage.Query{Checksums: sums}},
			}
			for _, f := range []string{"added", "updated", "size", "imageIdentifier", "extension", "mime",
				"width", "height", "checksum", "originalChecksum"} {
				for _, desc := range []bool{false, true} {
					dir := "asc"
					if desc {
						dir = "desc"
					}
					cases = append(cases, struct {
						name string
						q    storage.Query
					}{"sort=" + f + "-" + dir, storage.Query{Sort: []storage.SortKey{{Field: f, Desc: desc}}}})
				}
			}
			for _, c := range cases {
				c.q.Users, c.q.Limit = []string{"big"}, 20
				b.Run(c.name, func(b *testing.B) {
					var d []time.Duration
					for b.Loop() {
						start := time.Now()
						page, err := db.Images(ctx, c.q)
						d = append(d, time.Since(start))
						if err != nil || len(page.Images) != 20 {
							b.Fatalf("listing: %d images, %v", len(page.Images), err)
						}
					}
					slices.Sort(d)
					b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, "p99-ms")
				})
			}
		})
	}
}

// seed inserts n images for user in batches of 500 rows.
func seed(b *testing.B, db *storage.DB, user string, n int) {
	b.Helper()
	tx, err := db.SQL().Begin()
	if err != nil {
		b.Fatal(err)
	}
	exts := []string{"png", "jpg", "gif", "webp"}
	for start := 0; start < n; start += 500 {
		var rows []string
		for i := start; i < min(n, start+500); i++ {
			orig := "NULL"
			if i%3 == 0 {
				orig = fmt.Sprintf("'orig%07d'", (i*7919)%n)
			}
			ext := exts[i%4]
			t := int64(1_700_000_000_000_000) + int64((i*7907)%n)*1_000_000
			rows = append(rows, fmt.Sprintf("('%s', 'id%07d', %d, '%s', 'image/%s', %d, %d, 'sum%07d', %s, %d, %d, %d)",
				user, i, 1000+(i*31)%100000, ext, ext, 100+(i*13)%4000, 100+(i*17)%3000, i, orig, t, t+int64(i%7)*1_000_000, t))
		}
		if _, err := tx.Exec(`INSERT INTO images (user_name, identifier, size, extension, mime, width, height,
			checksum, original_checksum, added, updated, version) VALUES ` + strings.Join(rows, ",")); err != nil {
			tx.Rollback()
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
