package storagetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// md5 sums of the blocklist tests.
const (
	blockedSum = "0123456789abcdef0123456789abcdef"
	otherSum   = "fedcba9876543210fedcba9876543210"
)

// testBlocklist checks entries' round trip (ID, actor and creation set by
// the store), the refusals of malformed and duplicate entries, the list
// newest first and paged, the lookups an upload's check makes, deletion,
// and the audit entries and events of each change.
func testBlocklist(t *testing.T, db *storage.DB) {
	db.SetEvents(true)
	api := storage.WithActor(ctx(t), storage.Actor{Key: "admin", Addr: "192.0.2.7"})
	start := time.Now().Add(-time.Second)
	sum := &storage.BlocklistEntry{Checksum: blockedSum, Reason: "court order 12"}
	if err := db.AddBlocklistEntry(api, sum); err != nil {
		t.Fatal(err)
	}
	if sum.ID == 0 || sum.Actor != "admin" || sum.Created.Before(start) {
		t.Fatalf("AddBlocklistEntry left %+v", sum)
	}
	// The high bit set: the hash is a negative BIGINT.
	hash := &storage.BlocklistEntry{PHash: 0x8000ffff0000ffff, HasPHash: true, Distance: 6}
	if err := db.AddBlocklistEntry(api, hash); err != nil {
		t.Fatal(err)
	}
	if hash.ID == sum.ID {
		t.Fatalf("two entries with ID %d", hash.ID)
	}
	for _, want := range []*storage.BlocklistEntry{sum, hash} {
		got, err := db.BlocklistEntry(ctx(t), want.ID)
		if err != nil || got != *want {
			t.Fatalf("BlocklistEntry(%d) = %+v, %v; want %+v", want.ID, got, err, *want)
		}
	}
	_, err := db.BlocklistEntry(ctx(t), 999999)
	wantErr(t, "BlocklistEntry(missing)", err, storage.ErrNotExist)

	invalid := map[string]storage.BlocklistEntry{
		"neither":              {},
		"both":                 {Checksum: otherSum, PHash: 1, HasPHash: true},
		"short checksum":       {Checksum: otherSum[1:]},
		"upper-case checksum":  {Checksum: strings.ToUpper(otherSum)},
		"not hex":              {Checksum: "g" + otherSum[1:]},
		"checksum distance":    {Checksum: otherSum, Distance: 1},
		"distance 65":          {PHash: 1, HasPHash: true, Distance: 65},
		"negative distance":    {PHash: 1, HasPHash: true, Distance: -1},
		"reason of 1025 bytes": {Checksum: otherSum, Reason: strings.Repeat("r", 1025)},
	}
	for name, e := range invalid {
		wantErr(t, "AddBlocklistEntry("+name+")", db.AddBlocklistEntry(api, &e), storage.ErrInvalid)
	}
	// A value is blocked once, whatever the distance.
	wantErr(t, "AddBlocklistEntry(same checksum)", db.AddBlocklistEntry(api, &storage.BlocklistEntry{Checksum: blockedSum}), storage.ErrExist)
	wantErr(t, "AddBlocklistEntry(same hash)", db.AddBlocklistEntry(api,
		&storage.BlocklistEntry{PHash: hash.PHash, HasPHash: true, Distance: 10}), storage.ErrExist)
	edge := &storage.BlocklistEntry{PHash: 0, HasPHash: true, Distance: 64, Reason: strings.Repeat("r", 1024)}
	if err := db.AddBlocklistEntry(api, edge); err != nil {
		t.Fatalf("AddBlocklistEntry(hash 0, distance 64, reason of 1024 bytes): %v", err)
	}

	t.Run("List", func(t *testing.T) {
		list, n, err := db.Blocklist(ctx(t), 0, 0)
		if err != nil || n != 3 || len(list) != 3 || list[0] != *edge || list[1] != *hash || list[2] != *sum {
			t.Fatalf("Blocklist = %+v, %d, %v; want edge, hash, sum", list, n, err)
		}
		list, n, err = db.Blocklist(ctx(t), 2, 2)
		if err != nil || n != 3 || len(list) != 1 || list[0] != *sum {
			t.Fatalf("Blocklist page 2 of 2 = %+v, %d, %v; want sum", list, n, err)
		}
	})
	t.Run("Lookups", func(t *testing.T) {
		got, err := db.BlocklistChecksums(ctx(t), []string{otherSum, blockedSum})
		if err != nil || len(got) != 1 || got[0] != *sum {
			t.Fatalf("BlocklistChecksums = %+v, %v; want the checksum entry", got, err)
		}
		if got, err := db.BlocklistChecksums(ctx(t), []string{otherSum}); err != nil || len(got) != 0 {
			t.Fatalf("BlocklistChecksums(unblocked) = %+v, %v", got, err)
		}
		hashes, err := db.BlocklistHashes(ctx(t))
		if err != nil || len(hashes) != 2 || hashes[0] != *hash || hashes[1] != *edge {
			t.Fatalf("BlocklistHashes = %+v, %v; want hash, edge", hashes, err)
		}
	})
	t.Run("Blocks", func(t *testing.T) {
		for _, c := range []struct {
			e          storage.BlocklistEntry
			sums       []string
			h          uint64
			hasH, want bool
		}{
			{*sum, []string{otherSum, blockedSum}, 0, false, true},
			{*sum, []string{otherSum, ""}, 0, false, false},
			{*hash, nil, hash.PHash ^ 0b111111, true, true},
			{*hash, nil, hash.PHash ^ 0b1111111, true, false},
			{*hash, []string{blockedSum}, hash.PHash, false, false},
		} {
			if got := c.e.Blocks(c.sums, c.h, c.hasH); got != c.want {
				t.Errorf("entry %d Blocks(%v, %x, %v) = %v, want %v", c.e.ID, c.sums, c.h, c.hasH, got, c.want)
			}
		}
	})
	t.Run("Delete", func(t *testing.T) {
		if err := db.DeleteBlocklistEntry(api, edge.ID); err != nil {
			t.Fatal(err)
		}
		_, err := db.BlocklistEntry(ctx(t), edge.ID)
		wantErr(t, "BlocklistEntry(deleted)", err, storage.ErrNotExist)
		wantErr(t, "DeleteBlocklistEntry(deleted)", db.DeleteBlocklistEntry(api, edge.ID), storage.ErrNotExist)
		if hashes, _ := db.BlocklistHashes(ctx(t)); len(hashes) != 1 {
			t.Fatalf("BlocklistHashes after delete = %+v", hashes)
		}
	})
	blocklistAudit(t, db, []string{"blocklist.add " + id(sum), "blocklist.add " + id(hash),
		"blocklist.add " + id(edge), "blocklist.delete " + id(edge)})
}

func id(e *storage.BlocklistEntry) string { return strconv.FormatInt(e.ID, 10) }

// blocklistAudit checks the audit entries and events of testBlocklist's
// changes: one of each per change that succeeded, naming the entry.
func blocklistAudit(t *testing.T, db *storage.DB, want []string) {
	t.Helper()
	entries, n, err := db.AuditLog(ctx(t), storage.AuditQuery{Action: "blocklist.", Limit: 100})
	if err != nil || n != len(want) {
		t.Fatalf("AuditLog: %d entries, %v; want %d", n, err, len(want))
	}
	slices.Reverse(entries)
	var got []string
	for _, e := range entries {
		got = append(got, e.Action+" "+e.Target)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audit log %q, want %q", got, want)
	}
	if d := entries[0].Detail; entries[0].Actor != "admin" || d["checksum"] != blockedSum || d["reason"] != "court order 12" {
		t.Errorf("first entry %+v", entries[0])
	}
	if d := entries[1].Detail; d["phash"] != "8000ffff0000ffff" || d["distance"] != 6.0 || d["checksum"] != nil {
		t.Errorf("second entry %+v", entries[1])
	}
	if d := entries[3].Detail; d["phash"] != "0000000000000000" || d["distance"] != 64.0 {
		t.Errorf("deletion's entry %+v: want what was deleted", entries[3])
	}
	types := map[string]string{"blocklist.add": "io.vitrine.blocklist.added", "blocklist.delete": "io.vitrine.blocklist.deleted"}
	events := pendingEvents(t, db, len(want))
	for i, w := range want {
		action, id, _ := strings.Cut(w, " ")
		e := events[i]
		var data map[string]any
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatal(err)
		}
		if e.Type != types[action] || e.Subject != "blocklist/"+id || data["blocklist"] != id || data["reason"] == nil {
			t.Errorf("event %d: %s %s %s, want %s blocklist/%s", i, e.Type, e.Subject, e.Data, types[action], id)
		}
	}
	for _, typ := range types {
		if !slices.Contains(storage.EventTypes(), typ) {
			t.Errorf("EventTypes() lacks %s", typ)
		}
	}
}

// testBlocklistConcurrent adds one checksum and one hash from several
// writers at once: each is stored once, every other add is ErrExist.
func testBlocklistConcurrent(t *testing.T, db *storage.DB) {
	const writers = 6
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	for range writers {
		for _, e := range []storage.BlocklistEntry{{Checksum: blockedSum}, {PHash: 42, HasPHash: true, Distance: 3}} {
			wg.Go(func() { errs <- db.AddBlocklistEntry(ctx(t), &e) })
		}
	}
	wg.Wait()
	close(errs)
	added := 0
	for err := range errs {
		if err == nil {
			added++
			continue
		}
		wantErr(t, "concurrent AddBlocklistEntry", err, storage.ErrExist)
	}
	if list, n, err := db.Blocklist(ctx(t), 1, 0); added != 2 || n != 2 || err != nil {
		t.Fatalf("%d adds succeeded, %d entries (%+v, %v); want 2", added, n, list, err)
	}
}

// testBlocklistMatches finds the stored images of every user an entry
// blocks: by checksum or original checksum, and by hash within the
// distance, nearest first, paged.
func testBlocklistMatches(t *testing.T, db *storage.DB) {
	const h = uint64(0xf0f0f0f0f0f0f0f0)
	add := func(user, id, sum, orig string, hash uint64, bits int) {
		img := image(user, id, base)
		if sum != "" {
			img.Checksum = sum
		}
		img.OriginalChecksum = orig
		if bits >= 0 {
			img.Properties = &storage.Properties{PHash: hash ^ (1<<bits - 1), HasPHash: true}
		}
		mustInsert(t, db, img)
	}
	add("u1", "a", blockedSum, "", h, 64)             // the bytes; an unrelated hash
	add("u2", "b", otherSum, blockedSum, h, 63)       // rewritten by a listener from the bytes
	add("u3", "c", otherSum, otherSum, h, 0)          // the picture itself
	add("u1", "d", "", "", h, 3)                      // resized: 3 bits away
	add("u2", "e", "", "", h, 7)                      // 7 bits away
	add("u3", "f", "", "", 0, -1)                     // never analysed
	add("u4", "g", strings.Repeat("0", 32), "", h, 5) // 5 bits away
	matches := func(e storage.BlocklistEntry, page, limit int) ([]string, int) {
		t.Helper()
		p, err := db.BlocklistMatches(ctx(t), e, page, limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, img := range p.Images {
			got = append(got, fmt.Sprintf("%s/%s:%d", img.User, img.Identifier, img.Distance))
		}
		return got, p.Hits
	}
	for _, c := range []struct {
		name        string
		e           storage.BlocklistEntry
		page, limit int
		want        []string
		hits        int
	}{
		{"Checksum", storage.BlocklistEntry{Checksum: blockedSum}, 0, 0, []string{"u1/a:0", "u2/b:0"}, 2},
		{"ChecksumPaged", storage.BlocklistEntry{Checksum: blockedSum}, 2, 1, []string{"u2/b:0"}, 2},
		{"ChecksumNone", storage.BlocklistEntry{Checksum: strings.Repeat("1", 32)}, 0, 0, nil, 0},
		{"Hash", storage.BlocklistEntry{PHash: h, HasPHash: true, Distance: 6}, 0, 0, []string{"u3/c:0", "u1/d:3", "u4/g:5"}, 3},
		{"HashPaged", storage.BlocklistEntry{PHash: h, HasPHash: true, Distance: 7}, 2, 2, []string{"u4/g:5", "u2/e:7"}, 4},
		{"HashExact", storage.BlocklistEntry{PHash: h, HasPHash: true}, 0, 0, []string{"u3/c:0"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, hits := matches(c.e, c.page, c.limit); !slices.Equal(got, c.want) || hits != c.hits {
				t.Fatalf("BlocklistMatches = %q (%d hits), want %q (%d)", got, hits, c.want, c.hits)
			}
		})
	}
}
