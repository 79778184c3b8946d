package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"
)

// The audit log (migration step 10): every change storage makes to keys,
// groups, rules, images, metadata and short URLs writes one row in the
// same transaction as the change, naming the actor the context carries,
// and with it the change's event (events.go) when events are on.
// Changes made outside storage's tables (a filter reload) are recorded
// through RecordAudit, the same code path.

// Actor is who makes a change: the public key a request was signed with
// (the issuing key for an upload made with an upload token, which
// Image.UploadToken names) or "cli" for the command line, and the client's
// address.
type Actor struct {
	Key  string
	Addr string
}

type actorKey struct{}

// WithActor returns a context whose changes are recorded as made by a.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor ctx carries; a context with none is
// recorded as "system" (work of the server itself).
func ActorFrom(ctx context.Context) Actor {
	a, _ := ctx.Value(actorKey{}).(Actor)
	if a.Key == "" {
		a.Key = "system"
	}
	return a
}

// AuditEntry is one recorded change.
type AuditEntry struct {
	ID   int64
	Time time.Time
	// Actor is the public key, "cli" or "system"; Addr the client address
	// ("" when there is none).
	Actor, Addr string
	// Action is "<thing>.<verb>", such as "image.create" or "rule.delete".
	Action string
	// Target names what changed: "user/identifier", a public key, a group.
	Target string
	// Detail is a small JSON object with the change's particulars.
	Detail map[string]any
}

type auditRow struct {
	bun.BaseModel `bun:"table:audit_log"`

	ID     int64  `bun:"id,pk,autoincrement"`
	At     int64  `bun:"at"`
	Actor  string `bun:"actor"`
	Addr   string `bun:"addr"`
	Action string `bun:"action"`
	Target string `bun:"target"`
	Detail string `bun:"detail"`
}

// auditEvent is a change about to be recorded.
type auditEvent struct {
	action, target string
	detail         map[string]any
}

// clip cuts s to at most n bytes, dropping a rune cut in two.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// audit writes ev as done by ctx's actor through conn, the transaction of
// the change, and the change's event.
func (db *DB) audit(ctx context.Context, conn bun.IDB, ev auditEvent) error {
	return db.auditWith(ctx, conn, ev, nil)
}

// auditWith is audit with data, when not nil, as the event's data.
func (db *DB) auditWith(ctx context.Context, conn bun.IDB, ev auditEvent, data map[string]any) error {
	a, at := ActorFrom(ctx), time.Now()
	detail := "{}"
	if len(ev.detail) > 0 {
		b, err := json.Marshal(ev.detail)
		if err != nil {
			return fmt.Errorf("audit %s: %w", ev.action, err)
		}
		detail = string(b)
	}
	row := &auditRow{At: at.UnixMicro(), Actor: clip(a.Key, maxName), Addr: clip(a.Addr, 64),
		Action: clip(ev.action, 64), Target: clip(ev.target, 1024), Detail: detail}
	if _, err := conn.NewInsert().Model(row).Exec(ctx); err != nil {
		return fmt.Errorf("audit %s: %w", ev.action, err)
	}
	return db.writeEvent(ctx, conn, ev, at, data)
}

// RecordAudit records a change made outside storage's tables (such as a
// filter reload) as done by ctx's actor, with its event in the same
// transaction.
func (db *DB) RecordAudit(ctx context.Context, action, target string, detail map[string]any) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		return db.audit(ctx, tx, auditEvent{action, target, detail})
	})
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

// AuditQuery selects audit entries; zero fields do not filter.
type AuditQuery struct {
	// Actor is a public key, "cli" or "system".
	Actor string
	// Action matches exactly, or, ending in ".", every action it prefixes
	// ("image." for every image change).
	Action string
	// User matches targets of that user's images ("user/...") and the
	// target equal to it.
	User string
	// Since and Until bound the time (Until exclusive).
	Since, Until time.Time
	// Page is 1-based; Limit 0 means 50.
	Page, Limit int
}

// AuditLog returns one page of entries matching q, newest first, and the
// number of all matching entries.
func (db *DB) AuditLog(ctx context.Context, q AuditQuery) ([]AuditEntry, int, error) {
	if q.Page < 1 {
		q.Page = 1
	}
	if q.Limit <= 0 {
		q.Limit = 50
	}
	var rows []auditRow
	sel := db.bun.NewSelect().Model(&rows)
	if q.Actor != "" {
		sel.Where("actor = ?", q.Actor)
	}
	if strings.HasSuffix(q.Action, ".") {
		sel.Where("action LIKE ? ESCAPE '!'", likePrefix(q.Action))
	} else if q.Action != "" {
		sel.Where("action = ?", q.Action)
	}
	if q.User != "" {
		sel.WhereGroup(" AND ", func(s *bun.SelectQuery) *bun.SelectQuery {
			where, args := db.hasPrefix("target", q.User+"/")
			return s.Where("target = ?", q.User).WhereOr(where, args...)
		})
	}
	if !q.Since.IsZero() {
		sel.Where("at >= ?", q.Since.UnixMicro())
	}
	if !q.Until.IsZero() {
		sel.Where("at < ?", q.Until.UnixMicro())
	}
	n, err := sel.Order("at DESC", "id DESC").Limit(int64(q.Limit)).Offset(int64((q.Page - 1) * q.Limit)).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("storage: audit log: %w", err)
	}
	out := make([]AuditEntry, len(rows))
	for i, r := range rows {
		e := AuditEntry{ID: r.ID, Time: time.UnixMicro(r.At).UTC(), Actor: r.Actor, Addr: r.Addr,
			Action: r.Action, Target: r.Target}
		if err := json.Unmarshal([]byte(r.Detail), &e.Detail); err != nil {
			return nil, 0, fmt.Errorf("storage: audit entry %d: %w", r.ID, err)
		}
		out[i] = e
	}
	return out, int(n), nil
}

// likePrefix is a LIKE pattern matching strings that start with p, with
// LIKE's wildcards in p escaped with "!" (a character no dialect treats
// specially in a string literal, unlike the backslash on MySQL).
func likePrefix(p string) string {
	r := strings.NewReplacer(`!`, `!!`, `%`, `!%`, `_`, `!_`)
	return r.Replace(p) + "%"
}

// hasPrefix is a where clause and its arguments that keep the rows whose
// col starts with prefix, byte for byte. Why not LIKE everywhere: SQLite's
// LIKE ignores ASCII case, so alice's prefix would match Alice's rows.
func (db *DB) hasPrefix(col, prefix string) (string, []any) {
	if db.kind == sqliteKind {
		return "substr(" + col + ", 1, ?) = ?", []any{utf8.RuneCountInString(prefix), prefix}
	}
	return col + " LIKE ? ESCAPE '!'", []any{likePrefix(prefix)}
}

// PurgeAudit deletes the entries older than before and returns how many
// went.
func (db *DB) PurgeAudit(ctx context.Context, before time.Time) (int64, error) {
	res, err := db.bun.NewDelete().Model((*auditRow)(nil)).Where("at < ?", before.UnixMicro()).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("storage: purge audit log: %w", err)
	}
	return affected(res)
}

// metadataDetail is the audit detail of a metadata write: the top-level
// keys it set, not their values (which may be large or private).
func metadataDetail(md map[string]any) map[string]any {
	keys := slices.Sorted(maps.Keys(md))
	if len(keys) > 50 {
		keys = keys[:50]
	}
	return map[string]any{"keys": keys}
}
