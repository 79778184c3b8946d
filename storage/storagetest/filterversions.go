package storagetest

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// testFilterVersions checks filters deployed through the API: a version's
// round trip (actor and creation set by the store, a second push of the
// same version kept as the first), versions newest first, the active set's
// changes (revision, refusals of unknown versions, an error of the change
// changing nothing) with their audit entries and events, concurrent
// changes all kept, and the instances' reports.
func testFilterVersions(t *testing.T, db *storage.DB) {
	db.SetEvents(true)
	api := storage.WithActor(ctx(t), storage.Actor{Key: "admin", Addr: "192.0.2.7"})
	v1, v2 := strings.Repeat("a", 64), strings.Repeat("b", 64)
	start := time.Now().Add(-time.Second)
	first := &storage.FilterVersion{Name: "duotone", Version: v1, Manifest: json.RawMessage(`{"name":"duotone"}`), Size: 10}
	if err := db.AddFilterVersion(api, first); err != nil {
		t.Fatal(err)
	}
	if first.Actor != "admin" || first.Created.Before(start) || first.Size != 10 {
		t.Fatalf("AddFilterVersion left %+v", first)
	}
	time.Sleep(2 * time.Millisecond)
	again := &storage.FilterVersion{Name: "duotone", Version: v1, Manifest: json.RawMessage(`{"name":"duotone"}`), Size: 10}
	if err := db.AddFilterVersion(storage.WithActor(ctx(t), storage.Actor{Key: "other"}), again); err != nil {
		t.Fatal(err)
	}
	if again.Actor != "admin" || !again.Created.Equal(first.Created) {
		t.Fatalf("a second push of the same version = %+v, want the first %+v", again, first)
	}
	time.Sleep(2 * time.Millisecond)
	if err := db.AddFilterVersion(api, &storage.FilterVersion{Name: "duotone", Version: v2, Manifest: json.RawMessage(`{}`), Size: 20}); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]storage.FilterVersion{
		"bad name":     {Name: "Bad", Version: v1, Manifest: json.RawMessage(`{}`)},
		"bad version":  {Name: "duotone", Version: "abc", Manifest: json.RawMessage(`{}`)},
		"bad manifest": {Name: "duotone", Version: v1, Manifest: json.RawMessage(`{`)},
	} {
		wantErr(t, "AddFilterVersion("+name+")", db.AddFilterVersion(api, &v), storage.ErrInvalid)
	}
	list, err := db.FilterVersions(ctx(t), "duotone")
	if err != nil || len(list) != 2 || list[0].Version != v2 || list[1].Version != v1 || string(list[1].Manifest) != `{"name":"duotone"}` {
		t.Fatalf("FilterVersions = %+v, %v; want v2 then v1", list, err)
	}
	if all, err := db.FilterVersions(ctx(t), ""); err != nil || len(all) != 2 {
		t.Fatalf("FilterVersions(all) = %d, %v", len(all), err)
	}
	_, err = db.FilterVersion(ctx(t), "duotone", strings.Repeat("c", 64))
	wantErr(t, "FilterVersion(missing)", err, storage.ErrNotExist)

	set, err := db.FilterSet(ctx(t))
	if err != nil || set.Revision != 0 || len(set.Filters) != 0 {
		t.Fatalf("FilterSet of a fresh store = %+v, %v", set, err)
	}
	set, err = db.ChangeFilterSet(api, "filters.put", "duotone", map[string]any{"version": v1}, func(m map[string]storage.FilterDeployment) error {
		m["duotone"] = storage.FilterDeployment{Version: v1, Enabled: true}
		return nil
	})
	if err != nil || set.Revision != 1 || set.Filters["duotone"].Version != v1 {
		t.Fatalf("ChangeFilterSet = %+v, %v", set, err)
	}
	_, err = db.ChangeFilterSet(api, "filters.put", "duotone", nil, func(m map[string]storage.FilterDeployment) error {
		m["duotone"] = storage.FilterDeployment{Version: v1, Canary: strings.Repeat("c", 64), Percent: 50, Enabled: true}
		return nil
	})
	wantErr(t, "ChangeFilterSet(unknown canary)", err, storage.ErrInvalid)
	_, err = db.ChangeFilterSet(api, "filters.put", "blur", nil, func(m map[string]storage.FilterDeployment) error {
		m["blur"] = storage.FilterDeployment{Version: v1, Enabled: true} // v1 is duotone's
		return nil
	})
	wantErr(t, "ChangeFilterSet(another filter's version)", err, storage.ErrInvalid)
	refused := errors.New("refused")
	if _, err = db.ChangeFilterSet(api, "filters.delete", "duotone", nil, func(m map[string]storage.FilterDeployment) error {
		delete(m, "duotone")
		return refused
	}); !errors.Is(err, refused) {
		t.Fatalf("ChangeFilterSet(change fails) = %v, want its error", err)
	}
	if set, err = db.FilterSet(ctx(t)); err != nil || set.Revision != 1 || set.Filters["duotone"].Version != v1 {
		t.Fatalf("FilterSet after refused changes = %+v, %v; want revision 1", set, err)
	}

	t.Run("Concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := db.ChangeFilterSet(api, "filters.patch", "duotone", nil, func(m map[string]storage.FilterDeployment) error {
					d := m["duotone"]
					d.Percent++
					m["duotone"] = d
					return nil
				})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		set, err := db.FilterSet(ctx(t))
		if err != nil || set.Revision != 9 || set.Filters["duotone"].Percent != 8 {
			t.Fatalf("after 8 concurrent changes: %+v, %v; want revision 9, percent 8", set, err)
		}
	})

	t.Run("AuditAndEvents", func(t *testing.T) {
		entries, n, err := db.AuditLog(ctx(t), storage.AuditQuery{Action: "filters."})
		if err != nil || n != 9 || entries[n-1].Action != "filters.put" || entries[n-1].Target != "filters/duotone" || entries[n-1].Actor != "admin" {
			t.Fatalf("audit = %+v, %d, %v; want 9 entries, the first filters.put on filters/duotone by admin", entries, n, err)
		}
		events := pendingEvents(t, db, 9)
		e := events[0]
		var data map[string]any
		_ = json.Unmarshal(e.Data, &data)
		if e.Type != "io.vitrine.filter.deployed" || e.Subject != "filters/duotone" || data["filter"] != "duotone" || data["version"] != v1 {
			t.Fatalf("event = %+v (data %v)", e, data)
		}
		if events[1].Type != "io.vitrine.filter.updated" {
			t.Fatalf("second event %s, want io.vitrine.filter.updated", events[1].Type)
		}
	})

	t.Run("Instances", func(t *testing.T) {
		before := time.Now().Add(-time.Second)
		if err := db.ReportFilterInstance(ctx(t), "a", json.RawMessage(`{"duotone":"x"}`)); err != nil {
			t.Fatal(err)
		}
		if err := db.ReportFilterInstance(ctx(t), "b", json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
		if err := db.ReportFilterInstance(ctx(t), "a", json.RawMessage(`{"duotone":"y"}`)); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "ReportFilterInstance(not JSON)", db.ReportFilterInstance(ctx(t), "c", json.RawMessage(`{`)), storage.ErrInvalid)
		got, err := db.FilterInstances(ctx(t), before)
		if err != nil || len(got) != 2 || got[0].Instance != "a" || string(got[0].Loaded) != `{"duotone":"y"}` || got[0].Heartbeat.Before(before) {
			t.Fatalf("FilterInstances = %+v, %v", got, err)
		}
		if got, err := db.FilterInstances(ctx(t), time.Now().Add(time.Minute)); err != nil || len(got) != 0 {
			t.Fatalf("FilterInstances(future) = %+v, %v; want none", got, err)
		}
	})
}
