package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/uptrace/bun"
)

// Filters deployed through the API (migration step 25). A version is the
// SHA-256 of its bundle; the bundle is the blob FilterBlobKey(version),
// written before the version's row (write-then-commit). The active set is
// one row that every instance polls: what it holds and how it changes is
// the API's to decide (api/filters.go), storage keeps it consistent.

// FilterVersion is one uploaded version of a filter.
type FilterVersion struct {
	// Name is the filter's name, Version the SHA-256 of its bundle (64
	// lower-case hex digits).
	Name, Version string
	// Manifest is the version's filter.json.
	Manifest json.RawMessage
	// Size is the bundle's size in bytes.
	Size int64
	// Created and Actor say when and by which key it was uploaded;
	// AddFilterVersion sets them.
	Created time.Time
	Actor   string
}

// FilterDeployment is one filter's entry in the active set.
type FilterDeployment struct {
	// Version is the version serving.
	Version string `json:"version"`
	// Previous is the version that served before Version, if any: what a
	// rollback without a version goes back to.
	Previous string `json:"previous,omitempty"`
	// Enabled is false for a filter switched off: no instance loads it.
	Enabled bool `json:"enabled"`
	// Canary, when set, is a version served instead of Version for
	// Percent percent of images.
	Canary  string `json:"canary,omitempty"`
	Percent int    `json:"percent,omitempty"`
}

// FilterSet is the active set: per filter name, its deployment. Revision
// grows with every change, so an instance compares one number.
type FilterSet struct {
	Revision int64
	Filters  map[string]FilterDeployment
	Updated  time.Time
}

// FilterInstance is what one instance reports it loaded: Loaded is its own
// JSON (package main's), kept as given; Heartbeat is when it last said so.
type FilterInstance struct {
	Instance  string
	Loaded    json.RawMessage
	Heartbeat time.Time
}

// FilterBlobKey is the blob key of a filter version's bundle.
func FilterBlobKey(version string) string { return "filters/" + version }

var (
	filterVersionRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	filterNameRE    = regexp.MustCompile(`^[a-z][a-zA-Z0-9_-]{0,63}$`)
)

type filterVersionRow struct {
	bun.BaseModel `bun:"table:filter_versions"`

	Name     string `bun:"name,pk"`
	Version  string `bun:"version,pk"`
	Manifest string `bun:"manifest"`
	Size     int64  `bun:"size"`
	Created  int64  `bun:"created"`
	Actor    string `bun:"actor"`
}

func (r filterVersionRow) version() FilterVersion {
	return FilterVersion{Name: r.Name, Version: r.Version, Manifest: json.RawMessage(r.Manifest), Size: r.Size,
		Created: createdTime(r.Created), Actor: r.Actor}
}

type filterSetRow struct {
	bun.BaseModel `bun:"table:filter_set"`

	ID       int64  `bun:"id,pk"`
	Revision int64  `bun:"revision"`
	Active   string `bun:"active"`
	Updated  int64  `bun:"updated"`
}

type filterInstanceRow struct {
	bun.BaseModel `bun:"table:filter_instances"`

	Instance  string `bun:"instance,pk"`
	Loaded    string `bun:"loaded"`
	Heartbeat int64  `bun:"heartbeat"`
}

// AddFilterVersion records v, its bundle already stored under
// FilterBlobKey(v.Version), as uploaded by ctx's actor now. A version
// already recorded is left as it is and v is filled from its row: pushing
// the same bundle twice is one version.
func (db *DB) AddFilterVersion(ctx context.Context, v *FilterVersion) error {
	return db.RecordFilterVersion(ctx, v, Reservation{})
}

// RecordFilterVersion is AddFilterVersion claiming res, the reservation of
// the bundle's blob (Reserve) made before it was written, in the same
// transaction: a push that fails before recording leaves a reservation
// that the blob queue collects with its blob. The zero Reservation claims
// nothing.
func (db *DB) RecordFilterVersion(ctx context.Context, v *FilterVersion, res Reservation) error {
	if !filterNameRE.MatchString(v.Name) || !filterVersionRE.MatchString(v.Version) || !json.Valid(v.Manifest) {
		return fmt.Errorf("storage: add filter version %q %q: %w", v.Name, v.Version, ErrInvalid)
	}
	row := &filterVersionRow{Name: v.Name, Version: v.Version, Manifest: string(v.Manifest), Size: v.Size,
		Created: time.Now().UnixMicro(), Actor: clip(ActorFrom(ctx).Key, maxName)}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := db.insertIgnore(tx.NewInsert().Model(row), "created").Exec(ctx); err != nil {
			return err
		}
		return db.claim(ctx, tx, res)
	})
	if err != nil {
		return fmt.Errorf("storage: add filter version %s %s: %w", v.Name, v.Version, err)
	}
	return db.refillFilterVersion(ctx, v)
}

func (db *DB) refillFilterVersion(ctx context.Context, v *FilterVersion) error {
	got, err := db.FilterVersion(ctx, v.Name, v.Version)
	if err != nil {
		return err
	}
	*v = got
	return nil
}

// FilterVersion returns one version of a filter (ErrNotExist when there is
// none).
func (db *DB) FilterVersion(ctx context.Context, name, version string) (FilterVersion, error) {
	var row filterVersionRow
	err := db.bun.NewSelect().Model(&row).Where("name = ? AND version = ?", name, version).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return FilterVersion{}, fmt.Errorf("storage: filter %s version %s: %w", name, version, ErrNotExist)
	}
	if err != nil {
		return FilterVersion{}, fmt.Errorf("storage: filter %s version %s: %w", name, version, err)
	}
	return row.version(), nil
}

// FilterVersions returns every version of a filter, newest first; all
// filters' when name is "".
func (db *DB) FilterVersions(ctx context.Context, name string) ([]FilterVersion, error) {
	var rows []filterVersionRow
	q := db.bun.NewSelect().Model(&rows).OrderExpr("created DESC, version ASC")
	if name != "" {
		q.Where("name = ?", name)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("storage: filter versions: %w", err)
	}
	out := make([]FilterVersion, len(rows))
	for i, r := range rows {
		out[i] = r.version()
	}
	return out, nil
}

// FilterSet returns the active set.
func (db *DB) FilterSet(ctx context.Context) (FilterSet, error) {
	var row filterSetRow
	if err := db.bun.NewSelect().Model(&row).Where("id = 1").Scan(ctx); err != nil {
		return FilterSet{}, fmt.Errorf("storage: filter set: %w", err)
	}
	return row.set()
}

func (r filterSetRow) set() (FilterSet, error) {
	s := FilterSet{Revision: r.Revision, Filters: map[string]FilterDeployment{}, Updated: createdTime(r.Updated)}
	if err := json.Unmarshal([]byte(r.Active), &s.Filters); err != nil {
		return FilterSet{}, fmt.Errorf("storage: filter set: %w", err)
	}
	return s, nil
}

// ChangeFilterSet changes the active set with change, which gets the
// current deployments to modify in place, and records the change as
// action on target filters/<name> with detail in the audit log (and its
// event) in the same transaction. An error of change is returned as it is
// and changes nothing. Every version a deployment names must be a
// recorded version of its filter (ErrInvalid otherwise). Concurrent
// changes are serialised by the row's lock.
func (db *DB) ChangeFilterSet(ctx context.Context, action, name string, detail map[string]any,
	change func(map[string]FilterDeployment) error) (FilterSet, error) {
	var out FilterSet
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var row filterSetRow
		if err := db.forUpdate(tx.NewSelect().Model(&row).Where("id = 1")).Scan(ctx); err != nil {
			return err
		}
		cur, err := row.set()
		if err != nil {
			return err
		}
		if err := change(cur.Filters); err != nil {
			return err
		}
		for n, d := range cur.Filters {
			for _, v := range []string{d.Version, d.Canary} {
				if v == "" {
					continue
				}
				c, err := tx.NewSelect().Model((*filterVersionRow)(nil)).Where("name = ? AND version = ?", n, v).Count(ctx)
				if err != nil {
					return err
				}
				if c == 0 {
					return fmt.Errorf("filter %s has no version %s: %w", n, v, ErrInvalid)
				}
			}
		}
		active, err := json.Marshal(cur.Filters)
		if err != nil {
			return err
		}
		now := time.Now().UnixMicro()
		if _, err := tx.NewUpdate().Model((*filterSetRow)(nil)).
			Set("active = ?", string(active)).Set("revision = ?", row.Revision+1).Set("updated = ?", now).
			Where("id = 1").Exec(ctx); err != nil {
			return err
		}
		out = FilterSet{Revision: row.Revision + 1, Filters: cur.Filters, Updated: createdTime(now)}
		return db.audit(ctx, tx, auditEvent{action, "filters/" + name, detail})
	})
	if err != nil {
		return FilterSet{}, fmt.Errorf("storage: change filter set: %w", err)
	}
	return out, nil
}

// ReportFilterInstance records what instance loaded, now; rows of
// instances silent for a day are removed on the way.
func (db *DB) ReportFilterInstance(ctx context.Context, instance string, loaded json.RawMessage) error {
	if instance == "" || len(instance) > 128 || !json.Valid(loaded) {
		return fmt.Errorf("storage: report filter instance %q: %w", instance, ErrInvalid)
	}
	now := time.Now()
	err := db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*filterInstanceRow)(nil)).
			Where("instance = ? OR heartbeat < ?", instance, now.Add(-24*time.Hour).UnixMicro()).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(&filterInstanceRow{Instance: instance, Loaded: string(loaded), Heartbeat: now.UnixMicro()}).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: report filter instance %s: %w", instance, err)
	}
	return nil
}

// FilterInstances returns the instances whose last report is after since,
// by name.
func (db *DB) FilterInstances(ctx context.Context, since time.Time) ([]FilterInstance, error) {
	var rows []filterInstanceRow
	if err := db.bun.NewSelect().Model(&rows).Where("heartbeat > ?", since.UnixMicro()).OrderExpr("instance ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("storage: filter instances: %w", err)
	}
	out := make([]FilterInstance, len(rows))
	for i, r := range rows {
		out[i] = FilterInstance{Instance: r.Instance, Loaded: json.RawMessage(r.Loaded), Heartbeat: createdTime(r.Heartbeat)}
	}
	return out, nil
}
