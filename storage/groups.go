package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
)

// groupRow is the access_groups table; Resources is a JSON array.
type groupRow struct {
	bun.BaseModel `bun:"table:access_groups"`

	Name      string `bun:"name,pk"`
	Resources string `bun:"resources"`
}

func (r *groupRow) group() (Group, error) {
	g := Group{Name: r.Name}
	if err := json.Unmarshal([]byte(r.Resources), &g.Resources); err != nil {
		return Group{}, fmt.Errorf("storage: group %s: decode resources: %w", r.Name, err)
	}
	if g.Resources == nil {
		g.Resources = []string{}
	}
	return g, nil
}

// encodeList stores a string list as a JSON array ("[]" for nil).
func encodeList(list []string) string {
	if list == nil {
		list = []string{}
	}
	b, _ := json.Marshal(list) // a []string always marshals
	return string(b)
}

// Group returns a resource group.
func (db *DB) Group(ctx context.Context, name string) (Group, error) {
	var row groupRow
	err := db.bun.NewSelect().Model(&row).Where("name = ?", name).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Group{}, fmt.Errorf("storage: group %s: %w", name, ErrNotExist)
	}
	if err != nil {
		return Group{}, fmt.Errorf("storage: group %s: %w", name, err)
	}
	return row.group()
}

// PutGroup creates a group or replaces an existing group's resources;
// created tells which.
func (db *DB) PutGroup(ctx context.Context, g Group) (created bool, err error) {
	if err := checkLen("group name", g.Name, maxName, true); err != nil {
		return false, err
	}
	row := &groupRow{Name: g.Name, Resources: encodeList(g.Resources)}
	created, err = db.upsert(ctx, row, "name", "resources",
		auditEvent{action: "group", target: g.Name, detail: map[string]any{"resources": g.Resources}})
	if err != nil {
		return false, fmt.Errorf("storage: put group %s: %w", g.Name, err)
	}
	return created, nil
}

// DeleteGroup deletes a group and every rule that uses it.
func (db *DB) DeleteGroup(ctx context.Context, name string) error {
	err := db.deleteWithRules(ctx, (*groupRow)(nil), "name", "group_name", name,
		auditEvent{action: "group.delete", target: name})
	if err != nil {
		return fmt.Errorf("storage: delete group %s: %w", name, err)
	}
	return nil
}

// Groups returns one page of groups sorted by name, and the number of all
// groups. Page is 1-based (0 reads as 1); limit 0 means no limit.
func (db *DB) Groups(ctx context.Context, page, limit int) ([]Group, int, error) {
	if page < 0 || limit < 0 {
		return nil, 0, fmt.Errorf("storage: groups: negative page or limit: %w", ErrInvalid)
	}
	var rows []groupRow
	q := db.bun.NewSelect().Model(&rows).Order("name")
	if limit > 0 {
		q = q.Limit(int64(limit))
		if page > 1 {
			q = q.Offset(int64((page - 1) * limit))
		}
	}
	if err := q.Scan(ctx); err != nil {
		return nil, 0, fmt.Errorf("storage: groups: %w", err)
	}
	total := len(rows)
	if limit > 0 {
		n, err := db.bun.NewSelect().Model((*groupRow)(nil)).Count(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("storage: count groups: %w", err)
		}
		total = int(n)
	}
	groups := make([]Group, len(rows))
	for i := range rows {
		g, err := rows[i].group()
		if err != nil {
			return nil, 0, err
		}
		groups[i] = g
	}
	return groups, total, nil
}
