package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
)

// ruleRow is the access_rules table; Resources and Users are JSON arrays.
type ruleRow struct {
	bun.BaseModel `bun:"table:access_rules"`

	ID        int64          `bun:"id,pk,autoincrement"`
	PublicKey string         `bun:"public_key"`
	Group     sql.NullString `bun:"group_name"`
	Resources string         `bun:"resources"`
	Users     string         `bun:"users"`
}

func (r *ruleRow) rule() (Rule, error) {
	rule := Rule{ID: r.ID, PublicKey: r.PublicKey, Group: r.Group.String}
	if err := json.Unmarshal([]byte(r.Users), &rule.Users); err != nil {
		return Rule{}, fmt.Errorf("storage: rule %d: decode users: %w", r.ID, err)
	}
	if !r.Group.Valid {
		if err := json.Unmarshal([]byte(r.Resources), &rule.Resources); err != nil {
			return Rule{}, fmt.Errorf("storage: rule %d: decode resources: %w", r.ID, err)
		}
	}
	return rule, nil
}

// Rules returns a key's rules in id order; ErrNotExist when the key does
// not exist.
func (db *DB) Rules(ctx context.Context, publicKey string) ([]Rule, error) {
	var rows []ruleRow
	err := db.bun.NewSelect().Model(&rows).Where("public_key = ?", publicKey).Order("id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: rules of %s: %w", publicKey, err)
	}
	if len(rows) == 0 {
		exists, err := db.bun.NewSelect().Model((*keyRow)(nil)).Where("public_key = ?", publicKey).Exists(ctx)
		if err != nil {
			return nil, fmt.Errorf("storage: rules of %s: %w", publicKey, err)
		}
		if !exists {
			return nil, fmt.Errorf("storage: key %s: %w", publicKey, ErrNotExist)
		}
	}
	rules := make([]Rule, len(rows))
	for i := range rows {
		r, err := rows[i].rule()
		if err != nil {
			return nil, err
		}
		rules[i] = r
	}
	return rules, nil
}

// AddRules adds rules to a key in one transaction and returns them with
// their IDs and PublicKey set. ErrNotExist when the key does not exist;
// ErrInvalid when a rule has no users or does not have exactly one of Group
// and Resources. Group names are not checked here: groups may live outside
// the database (built-in and configured ones), so the caller validates them.
func (db *DB) AddRules(ctx context.Context, publicKey string, rules []Rule) ([]Rule, error) {
	rows, err := ruleRows(publicKey, rules)
	if err != nil {
		return nil, err
	}
	err = db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var one int
		err := db.forUpdate(tx.NewSelect().Model((*keyRow)(nil)).ColumnExpr("1").
			Where("public_key = ?", publicKey)).Scan(ctx, &one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("key %s: %w", publicKey, ErrNotExist)
		}
		if err != nil {
			return err
		}
		return db.insertRules(ctx, tx, publicKey, rows, rules)
	})
	if err != nil {
		return nil, fmt.Errorf("storage: add rules to %s: %w", publicKey, err)
	}
	out := make([]Rule, len(rows))
	for i := range rows {
		r, err := rows[i].rule()
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// Rule returns one of a key's rules.
func (db *DB) Rule(ctx context.Context, publicKey string, id int64) (Rule, error) {
	var row ruleRow
	err := db.bun.NewSelect().Model(&row).Where("id = ? AND public_key = ?", id, publicKey).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Rule{}, fmt.Errorf("storage: rule %d of %s: %w", id, publicKey, ErrNotExist)
	}
	if err != nil {
		return Rule{}, fmt.Errorf("storage: rule %d of %s: %w", id, publicKey, err)
	}
	return row.rule()
}

// DeleteRule deletes one of a key's rules.
func (db *DB) DeleteRule(ctx context.Context, publicKey string, id int64) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := deleted(tx.NewDelete().Model((*ruleRow)(nil)).
			Where("id = ? AND public_key = ?", id, publicKey).Exec(ctx)); err != nil {
			return err
		}
		return db.audit(ctx, tx, auditEvent{"rule.delete", publicKey, map[string]any{"id": id}})
	})
	if err != nil {
		return fmt.Errorf("storage: delete rule %d of %s: %w", id, publicKey, err)
	}
	return nil
}

// ruleRows checks rules as AddRules documents and returns their rows.
func ruleRows(publicKey string, rules []Rule) ([]ruleRow, error) {
	rows := make([]ruleRow, len(rules))
	for i, r := range rules {
		if len(r.Users) == 0 {
			return nil, fmt.Errorf("storage: rule %d: no users: %w", i, ErrInvalid)
		}
		if (r.Group == "") == (len(r.Resources) == 0) {
			return nil, fmt.Errorf("storage: rule %d: exactly one of group and resources must be set: %w", i, ErrInvalid)
		}
		rows[i] = ruleRow{
			PublicKey: publicKey,
			Group:     sql.NullString{String: r.Group, Valid: r.Group != ""},
			Resources: encodeList(r.Resources),
			Users:     encodeList(r.Users),
		}
	}
	return rows, nil
}

// insertRules inserts rows in tx, setting their IDs.
func (db *DB) insertRules(ctx context.Context, tx bun.Tx, publicKey string, rows []ruleRow, rules []Rule) error {
	for i := range rows {
		if _, err := tx.NewInsert().Model(&rows[i]).Exec(ctx); err != nil {
			return err
		}
		r := rules[i]
		detail := map[string]any{"id": rows[i].ID, "users": r.Users}
		if r.Group != "" {
			detail["group"] = r.Group
		} else {
			detail["resources"] = r.Resources
		}
		if err := db.audit(ctx, tx, auditEvent{"rule.create", publicKey, detail}); err != nil {
			return err
		}
	}
	return nil
}
