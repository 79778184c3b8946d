package storage

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/uptrace/bun"
)

// metadataRow is the metadata table: one JSON object per image.
type metadataRow struct {
	bun.BaseModel `bun:"table:metadata"`

	User       string `bun:"user_name,pk"`
	Identifier string `bun:"identifier,pk"`
	Document   string `bun:"document"`
}

// decodeDocument parses a stored metadata document. Numbers come back as
// json.Number, so that large integers and exact decimals survive a round
// trip; callers convert with Int64 or Float64.
func decodeDocument(doc string) (map[string]any, error) {
	md := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	dec.UseNumber()
	if err := dec.Decode(&md); err != nil {
		return nil, fmt.Errorf("decode metadata: %w", err)
	}
	if md == nil { // the document was "null"
		md = map[string]any{}
	}
	return md, nil
}

// Metadata returns an image's metadata: an empty map when it has none,
// ErrNotExist when the image does not exist. Numbers are json.Number.
func (db *DB) Metadata(ctx context.Context, user, id string) (map[string]any, error) {
	return db.readMetadata(ctx, db.bun, user, id)
}

// readMetadata reads an image's metadata through tx, a transaction or the DB.
func (db *DB) readMetadata(ctx context.Context, tx bun.IDB, user, id string) (map[string]any, error) {
	var doc string
	err := tx.NewSelect().Model((*metadataRow)(nil)).Column("document").
		Where("user_name = ? AND identifier = ?", user, id).Scan(ctx, &doc)
	if errors.Is(err, sql.ErrNoRows) {
		var one int
		err := tx.NewSelect().Model((*imageRow)(nil)).ColumnExpr("1").
			Where("user_name = ? AND identifier = ?", user, id).Scan(ctx, &one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("storage: metadata %s/%s: %w", user, id, ErrNotExist)
		}
		if err != nil {
			return nil, fmt.Errorf("storage: metadata %s/%s: %w", user, id, err)
		}
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: metadata %s/%s: %w", user, id, err)
	}
	md, err := decodeDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("storage: metadata %s/%s: %w", user, id, err)
	}
	return md, nil
}

// writeMetadata replaces an image's metadata document inside tx.
func (db *DB) writeMetadata(ctx context.Context, tx bun.Tx, user, id string, md map[string]any, fresh bool) error {
	if md == nil {
		md = map[string]any{}
	}
	doc, err := json.Marshal(md)
	if err != nil {
		return fmt.Errorf("storage: metadata %s/%s: encode: %w", user, id, ErrInvalid)
	}
	if fresh { // as writeProperties
		if done, err := insertFresh(ctx, db, tx, &metadataRow{User: user, Identifier: id, Document: string(doc)}); done || err != nil {
			if err != nil {
				return fmt.Errorf("storage: metadata %s/%s: %w", user, id, err)
			}
			return nil
		}
	}
	if _, err := tx.NewDelete().Model((*metadataRow)(nil)).
		Where("user_name = ? AND identifier = ?", user, id).Exec(ctx); err != nil {
		return fmt.Errorf("storage: metadata %s/%s: %w", user, id, err)
	}
	row := &metadataRow{User: user, Identifier: id, Document: string(doc)}
	if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
		return fmt.Errorf("storage: metadata %s/%s: %w", user, id, err)
	}
	return nil
}

// SetMetadata replaces an image's metadata with md and sets the image's
// Updated time to now. ErrNotExist when the image does not exist.
func (db *DB) SetMetadata(ctx context.Context, user, id string, md map[string]any) error {
	return db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := db.lockImage(ctx, tx, user, id); err != nil {
			return err
		}
		if err := db.writeMetadata(ctx, tx, user, id, md, false); err != nil {
			return err
		}
		if err := db.audit(ctx, tx, auditEvent{"metadata.set", user + "/" + id, metadataDetail(md)}); err != nil {
			return err
		}
		return db.touchImage(ctx, tx, user, id)
	})
}

// UpdateMetadata replaces an image's metadata with what change returns
// for the current document, read and written in one transaction with the
// image locked, so no other change comes between; an error from change
// leaves the metadata as it was and is returned. It sets the image's
// Updated time to now. ErrNotExist when the image does not exist.
func (db *DB) UpdateMetadata(ctx context.Context, user, id string, change func(cur map[string]any) (map[string]any, error)) error {
	return db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := db.lockImage(ctx, tx, user, id); err != nil {
			return err
		}
		cur, err := db.readMetadata(ctx, tx, user, id)
		if err != nil {
			return err
		}
		md, err := change(cur)
		if err != nil {
			return err
		}
		if err := db.writeMetadata(ctx, tx, user, id, md, false); err != nil {
			return err
		}
		if err := db.audit(ctx, tx, auditEvent{"metadata.set", user + "/" + id, metadataDetail(md)}); err != nil {
			return err
		}
		return db.touchImage(ctx, tx, user, id)
	})
}

// MergeMetadata sets md's top-level keys in an image's metadata, keeping the
// others, sets the image's Updated time to now and returns the merged
// document. ErrNotExist when the image does not exist.
func (db *DB) MergeMetadata(ctx context.Context, user, id string, md map[string]any) (map[string]any, error) {
	var merged map[string]any
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := db.lockImage(ctx, tx, user, id); err != nil {
			return err
		}
		cur, err := db.readMetadata(ctx, tx, user, id)
		if err != nil {
			return err
		}
		maps.Copy(cur, md)
		if err := db.writeMetadata(ctx, tx, user, id, cur, false); err != nil {
			return err
		}
		merged = cur
		if err := db.audit(ctx, tx, auditEvent{"metadata.merge", user + "/" + id, metadataDetail(md)}); err != nil {
			return err
		}
		return db.touchImage(ctx, tx, user, id)
	})
	if err != nil {
		return nil, err
	}
	// Return what a later Metadata call returns (numbers as json.Number).
	doc, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("storage: metadata %s/%s: %w", user, id, err)
	}
	return decodeDocument(string(doc))
}

// DeleteMetadata removes an image's metadata and sets its Updated time to
// now. ErrNotExist when the image does not exist.
func (db *DB) DeleteMetadata(ctx context.Context, user, id string) error {
	return db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := db.lockImage(ctx, tx, user, id); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*metadataRow)(nil)).
			Where("user_name = ? AND identifier = ?", user, id).Exec(ctx); err != nil {
			return fmt.Errorf("storage: delete metadata %s/%s: %w", user, id, err)
		}
		if err := db.audit(ctx, tx, auditEvent{action: "metadata.delete", target: user + "/" + id}); err != nil {
			return err
		}
		return db.touchImage(ctx, tx, user, id)
	})
}

// fillMetadata sets Metadata on every image with one query.
func (db *DB) fillMetadata(ctx context.Context, images []Image) error {
	users := map[string]bool{}
	var userList, ids []string
	for _, img := range images {
		if !users[img.User] {
			users[img.User] = true
			userList = append(userList, img.User)
		}
		ids = append(ids, img.Identifier)
	}
	var rows []metadataRow
	err := db.bun.NewSelect().Model(&rows).
		Where("user_name IN (?) AND identifier IN (?)", bun.List(userList), bun.List(ids)).
		Scan(ctx)
	if err != nil {
		return fmt.Errorf("storage: images metadata: %w", err)
	}
	type key struct{ user, id string }
	docs := make(map[key]string, len(rows))
	for _, r := range rows {
		docs[key{r.User, r.Identifier}] = r.Document
	}
	for i := range images {
		doc, ok := docs[key{images[i].User, images[i].Identifier}]
		if !ok {
			images[i].Metadata = map[string]any{}
			continue
		}
		md, err := decodeDocument(doc)
		if err != nil {
			return fmt.Errorf("storage: metadata %s/%s: %w", images[i].User, images[i].Identifier, err)
		}
		images[i].Metadata = md
	}
	return nil
}
