package api

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/storage/storagetest"
)

// BenchmarkBlocklistCheck measures what the blocklist adds to an upload:
// the lookup of its two checksums and the comparison of its perceptual
// hash with every hash entry, with 10,000 checksum entries and 10, 100 or
// 1,000 hash entries, on SQLite and, with their VITRINE_TEST_* variables,
// PostgreSQL and MariaDB. "warm" is the usual upload (the instance's copy
// of the hash entries is fresh); "reload" reads them again every time, as
// the first upload after a change or after 5 seconds does.
//
//	go test ./api -run '^$' -bench BenchmarkBlocklistCheck
func BenchmarkBlocklistCheck(b *testing.B) {
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
			rng := rand.New(rand.NewPCG(1, 2))
			seedBlocklist(b, db, rng, 10_000, false)
			hashes := 0
			for _, n := range []int{10, 100, 1000} {
				seedBlocklist(b, db, rng, n-hashes, true)
				hashes = n
				s := &Server{blocklist: &blocklist{store: db, now: time.Now}, log: slog.Default()}
				props := &storage.Properties{PHash: rng.Uint64(), HasPHash: true}
				sums := []string{fmt.Sprintf("%032x", rng.Uint64()), fmt.Sprintf("%032x", rng.Uint64())}
				for _, mode := range []string{"warm", "reload"} {
					b.Run(fmt.Sprintf("hashes=%d/%s", n, mode), func(b *testing.B) {
						for b.Loop() {
							if mode == "reload" {
								s.blocklist.changed()
							}
							if err := s.checkBlockedChecksums(ctx, sums...); err != nil {
								b.Fatal(err)
							}
							if err := s.checkBlockedHash(ctx, props, nil); err != nil && !strings.Contains(err.Error(), "blocked") {
								b.Fatal(err)
							}
						}
					})
				}
			}
		})
	}
}

// seedBlocklist adds n random entries (hash entries when hashes) in a few
// statements, the same SQL on every dialect.
func seedBlocklist(b *testing.B, db *storage.DB, rng *rand.Rand, n int, hashes bool) {
	b.Helper()
	for n > 0 {
		chunk := min(n, 500)
		rows := make([]string, chunk)
		for i := range rows {
			if hashes {
				rows[i] = fmt.Sprintf("(NULL, %d, 6, 'bench', 'bench', 1)", int64(rng.Uint64()))
			} else {
				rows[i] = fmt.Sprintf("('%016x%016x', NULL, 0, 'bench', 'bench', 1)", rng.Uint64(), rng.Uint64())
			}
		}
		if _, err := db.SQL().Exec("INSERT INTO blocklist (checksum, phash, distance, reason, actor, created) VALUES " +
			strings.Join(rows, ", ")); err != nil {
			b.Fatal(err)
		}
		n -= chunk
	}
}
