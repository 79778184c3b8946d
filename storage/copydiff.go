package storage

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
)

// The row comparison of a copy (copy.go): what differs between the
// source's snapshot and the target, table by table, and its writing.

// tableDiff is what the target must change to hold a table's source rows.
type tableDiff struct {
	t                copyTable
	sh               *tableShape
	rows             int64
	inserts, updates []copyRow
	deletes          [][]any // primary keys
}

func (d *tableDiff) changes() int { return len(d.inserts) + len(d.updates) + len(d.deletes) }

// diffTables compares every table of copyTables between the source's
// snapshot conn and the target.
func diffTables(ctx context.Context, conn bun.IDB, src, dst *DB) ([]*tableDiff, error) {
	var out []*tableDiff
	for _, t := range copyTables {
		d, err := diffTable(ctx, conn, src, dst, t)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// syncTables makes every table of the target hold the rows of the
// source's snapshot conn, a table at a time, parents first: only one
// table's differences are held at once, and each is compared once the
// tables before it are written (a parent's deletion has removed its
// children by then). A table's deletions go before its insertions, which
// may reuse a unique value (a short URL's lookup) of a deleted row.
func syncTables(ctx context.Context, conn bun.IDB, src, dst *DB, p *CopyPass, progress func(string, int64, int64)) error {
	for _, t := range copyTables {
		d, err := diffTable(ctx, conn, src, dst, t)
		if err != nil {
			return err
		}
		if progress != nil {
			progress("rows "+t.name, d.rows, 0)
		}
		if err := d.apply(ctx, dst, p, progress); err != nil {
			return err
		}
	}
	return nil
}

// diffTable compares the table t between the source's snapshot conn and
// the target.
func diffTable(ctx context.Context, conn bun.IDB, src, dst *DB, t copyTable) (*tableDiff, error) {
	sh, err := shapeOf(ctx, dst.bun, t)
	if err != nil {
		return nil, err
	}
	type entry struct {
		hash [32]byte
		pk   []any
	}
	target := map[string]entry{}
	err = readRows(unbounded(ctx), dst.bun, t, sh, dst.openKey, func(r copyRow) error {
		pk := make([]any, len(sh.pkIdx))
		for j, i := range sh.pkIdx {
			pk[j] = r.vals[i]
		}
		target[r.key] = entry{r.hash, pk}
		return nil
	})
	if err != nil {
		return nil, err
	}
	d := &tableDiff{t: t, sh: sh}
	err = readRows(unbounded(ctx), conn, t, sh, src.openKey, func(r copyRow) error {
		d.rows++
		e, ok := target[r.key]
		switch {
		case !ok:
			d.inserts = append(d.inserts, r)
		case e.hash != r.hash:
			d.updates = append(d.updates, r)
		}
		delete(target, r.key)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, e := range target {
		d.deletes = append(d.deletes, e.pk)
	}
	return d, nil
}

// copyBatch is how many rows one statement inserts, and one transaction
// changes.
const copyBatch = 200

// apply writes d to dst: its deletions, then its insertions and updates.
func (d *tableDiff) apply(ctx context.Context, dst *DB, p *CopyPass, progress func(string, int64, int64)) error {
	for b := 0; b < len(d.deletes); b += copyBatch {
		batch := d.deletes[b:min(b+copyBatch, len(d.deletes))]
		err := dst.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, pk := range batch {
				if _, err := tx.ExecContext(ctx, "DELETE FROM "+d.t.name+" WHERE "+d.pkWhere(), pk...); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("delete from %s: %w", d.t.name, err)
		}
	}
	p.Rows += d.rows
	p.Deleted += len(d.deletes)
	if err := d.upsert(ctx, dst, progress); err != nil {
		return err
	}
	p.Inserted += len(d.inserts)
	p.Updated += len(d.updates)
	if len(d.inserts) > 0 && dst.kind == postgresKind && len(d.t.pk) == 1 && d.t.pk[0] == "id" && d.sh.kinds[d.sh.pkIdx[0]] == kindInt {
		// Rows came with their ids: the sequence goes past them.
		q := fmt.Sprintf("SELECT setval(pg_get_serial_sequence('%s', 'id'), (SELECT COALESCE(MAX(id), 0) + 1 FROM %s), false)", d.t.name, d.t.name)
		if _, err := dst.bun.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("advance the ids of %s: %w", d.t.name, err)
		}
	}
	return nil
}

func (d *tableDiff) pkWhere() string {
	w := make([]string, len(d.t.pk))
	for i, c := range d.t.pk {
		w[i] = c + " = ?"
	}
	return strings.Join(w, " AND ")
}

// upsert inserts d's new rows, copyBatch a statement, and updates its
// changed ones, each row's sealed columns sealed with dst's secret.
func (d *tableDiff) upsert(ctx context.Context, dst *DB, progress func(string, int64, int64)) error {
	cols := strings.Join(d.sh.cols, ", ")
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(d.sh.cols)), ", ") + ")"
	for b := 0; b < len(d.inserts); b += copyBatch {
		batch := d.inserts[b:min(b+copyBatch, len(d.inserts))]
		args := make([]any, 0, len(batch)*len(d.sh.cols))
		for _, r := range batch {
			vals, err := d.sealed(dst, r.vals)
			if err != nil {
				return err
			}
			args = append(args, vals...)
		}
		q := "INSERT INTO " + d.t.name + " (" + cols + ") VALUES " + strings.TrimSuffix(strings.Repeat(one+", ", len(batch)), ", ")
		if _, err := dst.bun.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("insert into %s: %w", d.t.name, err)
		}
		if progress != nil {
			progress("rows "+d.t.name, int64(b+len(batch)), int64(len(d.inserts)))
		}
	}
	set := make([]string, len(d.sh.cols))
	for i, c := range d.sh.cols {
		set[i] = c + " = ?"
	}
	q := "UPDATE " + d.t.name + " SET " + strings.Join(set, ", ") + " WHERE " + d.pkWhere()
	for b := 0; b < len(d.updates); b += copyBatch {
		batch := d.updates[b:min(b+copyBatch, len(d.updates))]
		err := dst.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, r := range batch {
				vals, err := d.sealed(dst, r.vals)
				if err != nil {
					return err
				}
				for _, i := range d.sh.pkIdx {
					vals = append(vals, r.vals[i])
				}
				if _, err := tx.ExecContext(ctx, q, vals...); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("update %s: %w", d.t.name, err)
		}
	}
	return nil
}

// sealed is vals with the table's sealed columns sealed for dst.
func (d *tableDiff) sealed(dst *DB, vals []any) ([]any, error) {
	out := append([]any(nil), vals...)
	if len(d.t.sealed) == 0 {
		return out, nil
	}
	named := map[string]any{}
	for i, c := range d.sh.cols {
		named[c] = vals[i]
	}
	for i, c := range d.sh.cols {
		if ad, ok := d.t.sealed[c]; ok && vals[i] != nil {
			s, err := dst.sealKey(ad(named), vals[i].(string))
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
	}
	return out, nil
}
