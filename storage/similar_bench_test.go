package storage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/storage/storagetest"
)

// BenchmarkSimilar runs the similar-image listing (page of 20 and hit
// count) for a user holding 100,000 analysed images, beside another user's
// 20,000, at maxDistance 4, 10 and 64, on SQLite and, with their
// VITRINE_TEST_* variables, PostgreSQL and MariaDB. It reports the median
// and 99th percentile as p50-ms and p99-ms.
//
//	go test ./storage -run '^$' -bench BenchmarkSimilar -benchtime 30x
func BenchmarkSimilar(b *testing.B) {
	backends := map[string]func(b *testing.B) string{
		"sqlite": func(b *testing.B) string { return "sqlite://" + filepath.Join(b.TempDir(), "bench.db") },
	}
	if os.Getenv("VITRINE_TEST_POSTGRES") != "" {
		backends["postgres"] = func(b *testing.B) string { return storagetest.PostgresDSN(b) }
	}
	if os.Getenv("VITRINE_TEST_MYSQL") != "" {
		backends["mysql"] = func(b *testing.B) string { return storagetest.MySQLDSN(b) }
	}
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
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
			seedHashes(b, db, "big", 100_000)
			seedHashes(b, db, "other", 20_000)
			if name == "postgres" {
				if _, err := db.SQL().Exec("ANALYZE"); err != nil {
					b.Fatal(err)
				}
			}
			for _, dist := range []int{4, 10, 64} {
				b.Run(fmt.Sprintf("maxDistance=%d", dist), func(b *testing.B) {
					q := storage.Query{Users: []string{"big"}, Limit: 20, Similar: &storage.Similarity{Hash: 0x0123456789abcdef, MaxDistance: dist}}
					var d []time.Duration
					for b.Loop() {
						start := time.Now()
						if _, err := db.Images(ctx, q); err != nil {
							b.Fatal(err)
						}
						d = append(d, time.Since(start))
					}
					slices.Sort(d)
					b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, "p99-ms")
				})
			}
		})
	}
}

// seedHashes gives the images seed made random perceptual hashes, one in
// a hundred near 0x0123456789abcdef.
func seedHashes(b *testing.B, db *storage.DB, user string, n int) {
	b.Helper()
	r := rand.New(rand.NewPCG(1, uint64(len(user))))
	tx, err := db.SQL().Begin()
	if err != nil {
		b.Fatal(err)
	}
	for start := 0; start < n; start += 500 {
		var rows []string
		for i := start; i < min(n, start+500); i++ {
			h := r.Uint64()
			if i%100 == 0 {
				h = 0x0123456789abcdef ^ (1 << (i % 64)) ^ (1 << ((i / 7) % 64))
			}
			rows = append(rows, fmt.Sprintf("('%s', 'id%07d', 'LEHV6nWB2yk8pyo0adR*.7kCMdnj', '1QcSHQRnh493V4dIh4eXh1h4kJUI', '#7f6e5d', '[\"#112233\"]', %d, 1700000000000000)",
				user, i, int64(h)))
		}
		if _, err := tx.Exec(`INSERT INTO image_properties (user_name, identifier, blurhash, thumbhash, average_color,
			palette, phash, analyzed) VALUES ` + strings.Join(rows, ",")); err != nil {
			tx.Rollback()
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
