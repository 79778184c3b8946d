package storage_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/storage/storagetest"
)

// benchBackends are the databases a storage benchmark runs on: SQLite,
// and PostgreSQL and MySQL when their test servers are set.
func benchBackends() []struct {
	name  string
	fresh func(b *testing.B) string
} {
	all := []struct {
		name  string
		fresh func(b *testing.B) string
	}{{"sqlite", func(b *testing.B) string { return "sqlite://" + filepath.Join(b.TempDir(), "bench.db") }}}
	if os.Getenv("VITRINE_TEST_POSTGRES") != "" {
		all = append(all, struct {
			name  string
			fresh func(b *testing.B) string
		}{"postgres", func(b *testing.B) string { return storagetest.PostgresDSN(b) }})
	}
	if os.Getenv("VITRINE_TEST_MYSQL") != "" {
		all = append(all, struct {
			name  string
			fresh func(b *testing.B) string
		}{"mysql", func(b *testing.B) string { return storagetest.MySQLDSN(b) }})
	}
	return all
}

// BenchmarkUploadCommit is what an upload spends in the database, the
// way the API stores one (the blob write left out): its key reserved,
// then its row committed with its user's usage, in whose transaction the
// quotas are checked. Without quotas (the default) and with quotas set,
// which run the same statements; the cost of the check is the difference
// to a build without it, and `check` alone.
//
//	go test ./storage -run '^$' -bench BenchmarkUploadCommit -benchtime 2000x
func BenchmarkUploadCommit(b *testing.B) {
	for _, be := range benchBackends() {
		for _, quotas := range []struct {
			name string
			q    storage.Quotas
		}{{"none", storage.Quotas{}}, {"set", storage.Quotas{Images: 1 << 40, Bytes: 1 << 60, VariantsPerImage: 100}}} {
			b.Run(be.name+"/quotas="+quotas.name, func(b *testing.B) {
				ctx := context.Background()
				db, err := storage.Open(ctx, be.fresh(b), storage.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				db.SetQuotas(quotas.q)
				i := 0
				for b.Loop() {
					img := &storage.Image{User: "bench", Identifier: fmt.Sprintf("%032x", i), Size: 100_000, Extension: "jpg",
						Mime: "image/jpeg", Width: 1920, Height: 1080, Checksum: fmt.Sprintf("%032x", i), BlobToken: storage.NewBlobToken()}
					i++
					if err := db.CheckQuota(ctx, img.User, img.Size); err != nil {
						b.Fatal(err)
					}
					res, err := db.Reserve(ctx, img.Key())
					if err != nil {
						b.Fatal(err)
					}
					if created, err := db.CommitImage(ctx, img, res, false); err != nil || !created {
						b.Fatalf("commit: %v, %v", created, err)
					}
				}
			})
		}
		b.Run(be.name+"/check", func(b *testing.B) {
			ctx := context.Background()
			db, err := storage.Open(ctx, be.fresh(b), storage.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetQuotas(storage.Quotas{Images: 1 << 40})
			img := &storage.Image{User: "bench", Identifier: "one", Size: 1, Checksum: "one"}
			if _, err := db.InsertImage(ctx, img); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := db.CheckQuota(ctx, "bench", 100_000); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
