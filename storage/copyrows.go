package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
)

// copyTable is a table Copy carries over, parents before children: its
// primary key, the rows it leaves (where), and its columns sealed with the
// store's secret, each with the additional data it is bound to.
type copyTable struct {
	name   string
	pk     []string
	where  string
	sealed map[string]func(row map[string]any) string
}

// sealedBy binds a sealed column to another column's value (a public key).
func sealedBy(col string) func(map[string]any) string {
	return func(r map[string]any) string { s, _ := r[col].(string); return s }
}

// copyTables are every table of the schema but schema_migrations (each
// store migrates itself), store_state (the source's own pause and
// instances) and filter_instances (each instance reports itself). A table
// a later step adds must be listed here: TestCopyCoversSchema fails until
// it is.
var copyTables = []copyTable{
	{name: "api_keys", pk: []string{"public_key"}, sealed: map[string]func(map[string]any) string{"private_key": sealedBy("public_key")}},
	{name: "access_groups", pk: []string{"name"}},
	{name: "access_rules", pk: []string{"id"}},
	{name: "images", pk: []string{"user_name", "identifier"}},
	{name: "metadata", pk: []string{"user_name", "identifier"}},
	{name: "short_urls", pk: []string{"id"}},
	{name: "image_properties", pk: []string{"user_name", "identifier"}},
	{name: "image_qualities", pk: []string{"user_name", "identifier", "format", "size_class"}},
	{name: "image_counts", pk: []string{"user_name"}},
	{name: "variants", pk: []string{"user_name", "identifier", "hash"}},
	{name: "variations", pk: []string{"user_name", "identifier", "width"}},
	{name: "variation_jobs", pk: []string{"id"}},
	{name: "admin_sessions", pk: []string{"id_hash"}, sealed: map[string]func(map[string]any) string{"private_key": sealedBy("public_key")}},
	{name: "blob_queue", pk: []string{"id"}, where: "blob_key NOT LIKE 'holds/%'"},
	{name: "audit_log", pk: []string{"id"}},
	{name: "usage_counters", pk: []string{"day", "metric", "label"}},
	{name: "events", pk: []string{"id"}},
	{name: "webhooks", pk: []string{"id"}, sealed: map[string]func(map[string]any) string{
		"secret": func(r map[string]any) string { s, _ := r["id"].(string); return webhookAD(s) }}},
	{name: "deliveries", pk: []string{"id"}},
	{name: "delivery_attempts", pk: []string{"id"}},
	{name: "blocklist", pk: []string{"id"}},
	{name: "erasures", pk: []string{"id"}},
	{name: "erasure_items", pk: []string{"erasure_id", "identifier"}},
	{name: "filter_set", pk: []string{"id"}},
	{name: "filter_versions", pk: []string{"name", "version"}},
	{name: "quotas", pk: []string{"user_name"}},
	{name: "upload_tokens", pk: []string{"id"}},
}

// copySkipped are the tables Copy leaves, and why (copyTables).
var copySkipped = map[string]bool{"schema_migrations": true, "store_state": true, "filter_instances": true, "sqlite_sequence": true}

// colKind is how a column's values compare and are written.
type colKind int

const (
	kindText colKind = iota
	kindInt
	kindFloat
	kindBool
	kindBytes
)

// kindOf maps a driver's column type name (SQLite's declared type,
// PostgreSQL's INT8 or BOOL, MySQL's TINYINT) to its kind.
func kindOf(typ string) colKind {
	t := strings.ToUpper(typ)
	switch {
	case strings.Contains(t, "BOOL"):
		return kindBool
	case strings.Contains(t, "INT"):
		return kindInt
	case strings.Contains(t, "DOUBLE"), strings.Contains(t, "FLOAT"), strings.Contains(t, "REAL"), strings.Contains(t, "NUMERIC"):
		return kindFloat
	case strings.Contains(t, "BLOB"), strings.Contains(t, "BYTEA"), strings.Contains(t, "BINARY"):
		return kindBytes
	}
	return kindText
}

// normalize turns what a driver scanned (MySQL's []byte for a number,
// SQLite's int64 for a boolean) into the one Go value of kind k.
func normalize(v any, k colKind) (any, error) {
	if v == nil {
		return nil, nil
	}
	var s string
	switch x := v.(type) {
	case []byte:
		s = string(x)
	case string:
		s = x
	case int64:
		switch k {
		case kindInt:
			return x, nil
		case kindFloat:
			return float64(x), nil
		case kindBool:
			return x != 0, nil
		}
		s = strconv.FormatInt(x, 10)
	case float64:
		switch k {
		case kindFloat:
			return x, nil
		case kindInt:
			return int64(x), nil
		}
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		switch k {
		case kindBool:
			return x, nil
		case kindInt, kindFloat:
			if x {
				return normalize(int64(1), k)
			}
			return normalize(int64(0), k)
		}
		s = strconv.FormatBool(x)
	default:
		return nil, fmt.Errorf("a value of type %T", v)
	}
	switch k {
	case kindInt:
		return strconv.ParseInt(s, 10, 64)
	case kindFloat:
		return strconv.ParseFloat(s, 64)
	case kindBool:
		return s == "1" || strings.EqualFold(s, "true") || s == "t", nil
	case kindBytes:
		return []byte(s), nil
	}
	return s, nil
}

// appendCanonical appends v (normalized) to b unambiguously, for the
// hashes and keys rows are compared by.
func appendCanonical(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 'n')
	case int64:
		return binary.BigEndian.AppendUint64(append(b, 'i'), uint64(x))
	case float64:
		return binary.BigEndian.AppendUint64(append(b, 'f'), math.Float64bits(x))
	case bool:
		if x {
			return append(b, 't')
		}
		return append(b, 'F')
	case string:
		return append(binary.BigEndian.AppendUint32(append(b, 's'), uint32(len(x))), x...)
	case []byte:
		return append(binary.BigEndian.AppendUint32(append(b, 'b'), uint32(len(x))), x...)
	}
	panic(fmt.Sprintf("storage: copy: canonical form of %T", v))
}

// tableShape is a table's columns as the target has them.
type tableShape struct {
	cols  []string
	kinds []colKind
	pkIdx []int
}

func shapeOf(ctx context.Context, conn bun.IDB, t copyTable) (*tableShape, error) {
	rows, err := conn.QueryContext(ctx, "SELECT * FROM "+t.name+" WHERE 1=0")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	sh := &tableShape{}
	idx := map[string]int{}
	for i, ct := range types {
		name := strings.ToLower(ct.Name())
		sh.cols = append(sh.cols, name)
		sh.kinds = append(sh.kinds, kindOf(ct.DatabaseTypeName()))
		idx[name] = i
	}
	for _, c := range t.pk {
		i, ok := idx[c]
		if !ok {
			return nil, fmt.Errorf("table %s has no column %s", t.name, c)
		}
		sh.pkIdx = append(sh.pkIdx, i)
	}
	return sh, rows.Err()
}

// copyRow is one row, normalized, its sealed columns in the clear.
type copyRow struct {
	vals []any
	key  string
	hash [32]byte
}

// readRows calls fn with every row of t in conn (the source's snapshot or
// the target), its sealed columns opened with open.
func readRows(ctx context.Context, conn bun.IDB, t copyTable, sh *tableShape, open func(ad, stored string) (string, error), fn func(copyRow) error) error {
	q := "SELECT " + strings.Join(sh.cols, ", ") + " FROM " + t.name
	if t.where != "" {
		q += " WHERE " + t.where
	}
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("read %s: %w", t.name, err)
	}
	defer rows.Close()
	raw := make([]any, len(sh.cols))
	ptrs := make([]any, len(raw))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("read %s: %w", t.name, err)
		}
		r := copyRow{vals: make([]any, len(raw))}
		for i, v := range raw {
			if r.vals[i], err = normalize(v, sh.kinds[i]); err != nil {
				return fmt.Errorf("read %s.%s: %w", t.name, sh.cols[i], err)
			}
		}
		if err := openSealed(t, sh, r.vals, open); err != nil {
			return err
		}
		var kb, hb []byte
		for _, i := range sh.pkIdx {
			kb = appendCanonical(kb, r.vals[i])
		}
		for _, v := range r.vals {
			hb = appendCanonical(hb, v)
		}
		r.key, r.hash = string(kb), sha256.Sum256(hb)
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// openSealed replaces the sealed columns of vals by their clear values.
func openSealed(t copyTable, sh *tableShape, vals []any, open func(ad, stored string) (string, error)) error {
	if len(t.sealed) == 0 {
		return nil
	}
	named := map[string]any{}
	for i, c := range sh.cols {
		named[c] = vals[i]
	}
	for i, c := range sh.cols {
		ad, ok := t.sealed[c]
		if !ok || vals[i] == nil {
			continue
		}
		plain, err := open(ad(named), vals[i].(string))
		if err != nil {
			return fmt.Errorf("read %s.%s: %w (is the source's secret the one it was written with?)", t.name, c, err)
		}
		vals[i] = plain
	}
	return nil
}

// readSQLite opens a read transaction on the SQLite database at path, on a
// connection of its own (the DB's take the write lock at BEGIN): in WAL
// mode it reads the database as it was at its first read, made here,
// while the writers go on.
func readSQLite(ctx context.Context, path string) (bun.IDB, func(), error) {
	sqldb, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_txlock=deferred&_busy_timeout=10000")
	if err != nil {
		return nil, nil, err
	}
	sqldb.SetMaxOpenConns(1)
	db := bun.NewDB(sqldb, sqlitedialect.New())
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		var n int
		err = tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master").Scan(&n)
	}
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("read the database: %w", err)
	}
	return tx, func() { _ = tx.Rollback(); db.Close() }, nil
}

// snapshotSQLite copies an SQLite database with VACUUM INTO (one read
// transaction, which does not hold back the writers) into dir and opens
// the copy: the source's rows at one moment.
func snapshotSQLite(ctx context.Context, db *DB, dir string) (*bun.DB, error) {
	path := filepath.Join(dir, "snapshot.db")
	_ = os.Remove(path)
	if _, err := db.bun.ExecContext(unbounded(ctx), "VACUUM INTO ?", path); err != nil {
		return nil, fmt.Errorf("snapshot the database: %w", err)
	}
	sqldb, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		return nil, err
	}
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

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
func diffTables(ctx context.Context, conn bun.IDB, src, dst *DB, progress func(string, int64, int64)) ([]*tableDiff, error) {
	var out []*tableDiff
	for _, t := range copyTables {
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
		if progress != nil {
			progress("rows "+t.name, d.rows, 0)
		}
		out = append(out, d)
	}
	return out, nil
}

// copyBatch is how many rows one statement inserts, and one transaction
// changes.
const copyBatch = 200

// applyDiffs writes diffs to dst: the deletions children first, then the
// insertions and updates parents first.
func applyDiffs(ctx context.Context, dst *DB, diffs []*tableDiff, p *CopyPass, progress func(string, int64, int64)) error {
	for i := len(diffs) - 1; i >= 0; i-- {
		d := diffs[i]
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
		p.Deleted += len(d.deletes)
	}
	for _, d := range diffs {
		p.Rows += d.rows
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
