package storagetest

import (
	"slices"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// testAudit checks that every kind of change is recorded in the audit log
// with the context's actor, in the change's transaction (a failed change
// records nothing), and that the log filters, pages and purges.
func testAudit(t *testing.T, db *storage.DB) {
	start := time.Now().Add(-time.Second)
	steps := auditSteps(t, db)
	api := storage.WithActor(ctx(t), storage.Actor{Key: "admin", Addr: "192.0.2.7"})
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s %s: %v", s.action, s.target, err)
		}
	}
	// Failed changes leave no entry.
	if err := db.DeleteImage(api, "u", "missing"); err == nil {
		t.Fatal("deleting a missing image succeeded")
	}
	if err := db.SetMetadata(api, "u", "missing", map[string]any{"a": 1}); err == nil {
		t.Fatal("metadata of a missing image was set")
	}
	all, n, err := db.AuditLog(ctx(t), storage.AuditQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(steps) || len(all) != len(steps) {
		t.Fatalf("AuditLog: %d entries (count %d), want %d: %+v", len(all), n, len(steps), all)
	}
	slices.Reverse(all) // oldest first, as the steps ran
	for i, s := range steps {
		e := all[i]
		if e.Action != s.action || e.Target != s.target {
			t.Errorf("entry %d = %s %s, want %s %s", i, e.Action, e.Target, s.action, s.target)
		}
		if e.Actor != "admin" && e.Actor != "cli" {
			t.Errorf("entry %d actor %q", i, e.Actor)
		}
		if e.Time.Before(start) || e.Time.After(time.Now().Add(time.Second)) {
			t.Errorf("entry %d time %v", i, e.Time)
		}
	}
	if all[1].Actor != "admin" || all[1].Addr != "192.0.2.7" || all[0].Actor != "cli" || all[0].Addr != "" {
		t.Errorf("actors: %+v, %+v", all[0], all[1])
	}
	if all[2].Detail["resources"] == nil || all[7].Detail["keys"] == nil || all[6].Detail["source"] != "https://images.example/img1.png" {
		t.Errorf("details: %+v, %+v, %+v", all[2].Detail, all[7].Detail, all[6].Detail)
	}
	auditFilters(t, db, start)
}

// auditStep is one change testAudit makes and the entry it expects.
type auditStep struct {
	action, target string
	run            func() error
}

// auditSteps are the changes testAudit makes, one of each kind, by the
// API's actor or the CLI's.
func auditSteps(t *testing.T, db *storage.DB) []auditStep {
	api := storage.WithActor(ctx(t), storage.Actor{Key: "admin", Addr: "192.0.2.7"})
	cli := storage.WithActor(ctx(t), storage.Actor{Key: "cli"})
	return []auditStep{
		{"key.create", "k1", func() error { _, err := db.PutKey(cli, storage.Key{PublicKey: "k1", PrivateKey: "p"}); return err }},
		{"key.update", "k1", func() error { _, err := db.PutKey(api, storage.Key{PublicKey: "k1", PrivateKey: "q"}); return err }},
		{"group.create", "g1", func() error {
			_, err := db.PutGroup(cli, storage.Group{Name: "g1", Resources: []string{"image.get"}})
			return err
		}},
		{"group.update", "g1", func() error {
			_, err := db.PutGroup(api, storage.Group{Name: "g1", Resources: []string{"image.head"}})
			return err
		}},
		{"rule.create", "k1", func() error {
			_, err := db.AddRules(api, "k1", []storage.Rule{{Group: "g1", Users: []string{"u"}}})
			return err
		}},
		{"rule.delete", "k1", func() error {
			rules, err := db.Rules(api, "k1")
			if err != nil {
				return err
			}
			return db.DeleteRule(cli, "k1", rules[0].ID)
		}},
		{"image.create", "u/img1", func() error {
			img := image("u", "img1", base)
			img.Source = "https://images.example/img1.png"
			_, err := db.InsertImage(api, img)
			return err
		}},
		{"metadata.set", "u/img1", func() error { return db.SetMetadata(api, "u", "img1", map[string]any{"a": 1}) }},
		{"metadata.merge", "u/img1", func() error { _, err := db.MergeMetadata(cli, "u", "img1", map[string]any{"b": 2}); return err }},
		{"metadata.delete", "u/img1", func() error { return db.DeleteMetadata(api, "u", "img1") }},
		{"shorturl.create", "u/img1", func() error {
			return db.InsertShortURL(api, storage.ShortURL{ID: "s1", User: "u", Image: "img1", Extension: "png"})
		}},
		{"shorturl.delete", "u/img1", func() error { return db.DeleteShortURL(cli, "u", "img1", "s1") }},
		{"filters.reload", "filters", func() error { return db.RecordAudit(cli, "filters.reload", "filters", map[string]any{"loaded": 2}) }},
		{"image.delete", "u/img1", func() error { return db.DeleteImage(cli, "u", "img1") }},
		{"group.delete", "g1", func() error { return db.DeleteGroup(api, "g1") }},
		{"key.delete", "k1", func() error { return db.DeleteKey(api, "k1") }},
	}
}

// auditFilters checks AuditLog's filters, paging and PurgeAudit on the log
// testAudit wrote.
func auditFilters(t *testing.T, db *storage.DB, start time.Time) {
	cases := []struct {
		name string
		q    storage.AuditQuery
		want int
	}{
		{"actor cli", storage.AuditQuery{Actor: "cli"}, 7},
		{"actor admin", storage.AuditQuery{Actor: "admin"}, 9},
		{"action prefix", storage.AuditQuery{Action: "metadata."}, 3},
		{"action exact", storage.AuditQuery{Action: "key.create"}, 1},
		{"wildcard escaped", storage.AuditQuery{Action: "key_"}, 0},
		{"user", storage.AuditQuery{User: "u"}, 7},
		{"since future", storage.AuditQuery{Since: time.Now().Add(time.Hour)}, 0},
		{"until past", storage.AuditQuery{Until: start}, 0},
		{"window", storage.AuditQuery{Since: start, Until: time.Now().Add(time.Minute)}, 16},
	}
	for _, c := range cases {
		got, n, err := db.AuditLog(ctx(t), c.q)
		if err != nil || n != c.want || len(got) != c.want {
			t.Errorf("%s: %d entries, count %d, %v; want %d", c.name, len(got), n, err, c.want)
		}
	}
	page, n, err := db.AuditLog(ctx(t), storage.AuditQuery{Page: 2, Limit: 5})
	if err != nil || n != 16 || len(page) != 5 {
		t.Fatalf("page 2: %d entries, count %d, %v", len(page), n, err)
	}
	if purged, err := db.PurgeAudit(ctx(t), time.Now().Add(time.Minute)); err != nil || purged != 16 {
		t.Fatalf("PurgeAudit = %d, %v; want 16", purged, err)
	}
	if _, n, _ := db.AuditLog(ctx(t), storage.AuditQuery{}); n != 0 {
		t.Fatalf("after purge: %d entries", n)
	}
}
