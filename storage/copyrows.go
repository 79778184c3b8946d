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
