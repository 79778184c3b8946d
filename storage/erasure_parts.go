package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// What an erasure removes, one table a line: a table that holds a user's
// rows is erased by adding one entry to imageParts (rows that belong to
// one image, erased with it) or userParts (rows that belong to the user),
// and fsck then checks it for erased users too. The images table itself,
// with its blobs and the receipt's items, is eraseImages' (erasures.go).

// imagePart is a table whose rows belong to one image: count counts a
// user's rows; erase deletes, inside tx, the rows of the images ids of
// user (every row of user when ids is nil), queues the blobs they name,
// and returns how many rows went.
type imagePart struct {
	kind  string // its key in Erasure.Counts
	count func(ctx context.Context, db *DB, idb bun.IDB, user string) (int64, error)
	erase func(ctx context.Context, db *DB, tx bun.Tx, user string, ids []string) (int64, error)
}

// imageParts are erased with each batch of images, before the image rows
// (whose foreign keys would cascade to some of them uncounted), and once
// more for the whole user when no image is left, for rows whose image was
// gone already.
var imageParts = []imagePart{
	rowsOfImages("metadata", "metadata"),
	rowsOfImages("properties", "image_properties"),
	rowsOfImages("qualities", "image_qualities"),
	rowsOfImages("shortUrls", "short_urls"),
	{"variants", countRows("variants"), eraseVariants},
	{"variations", countRows("variations"), eraseVariations},
	rowsOfImages("variationJobs", "variation_jobs"),
}

// userPart is a table whose rows belong to a user: count counts them;
// erase deletes them inside tx, the erasure e's final transaction, and
// returns how many went.
type userPart struct {
	kind  string
	count func(ctx context.Context, db *DB, idb bun.IDB, user string) (int64, error)
	erase func(ctx context.Context, db *DB, tx bun.Tx, e *erasureRow) (int64, error)
}

// userParts are erased in the erasure's final transaction, once the
// user's images and their blobs are gone.
var userParts = []userPart{
	rowsOfUser("imageCounts", "image_counts"),
	rowsOfUser("uploadTokens", "upload_tokens"),
	rowsOfUser("quotas", "quotas"),
	{"usageCounters", countUsage, eraseUsage},
	{"webhooks", countWebhooks, eraseWebhooks},
	{"deliveries", countDeliveries, eraseDeliveries},
	{"events", countEvents, eraseEvents},
}

// userSubjects matches, in a where clause on a subject column, the
// subjects of user's images and upload tokens (users/<user>/...), not the
// user's own (users/<user>: the erasure's event and its quotas').
func userSubjects(db *DB, user string) (string, []any) {
	return db.hasPrefix("subject", "users/"+user+"/")
}

// countDeliveries counts the deliveries, pending or logged, of events of
// user's images and tokens: they carry what the erasure removes (ids,
// checksums, sizes), so they go with it, unsent.
func countDeliveries(ctx context.Context, db *DB, idb bun.IDB, user string) (int64, error) {
	where, args := userSubjects(db, user)
	n, err := idb.NewSelect().Model((*deliveryRow)(nil)).Where(where, args...).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count deliveries of %s: %w", user, err)
	}
	return int64(n), nil
}

func eraseDeliveries(ctx context.Context, db *DB, tx bun.Tx, e *erasureRow) (int64, error) {
	where, args := userSubjects(db, e.User)
	ids := tx.NewSelect().Model((*deliveryRow)(nil)).Column("id").Where(where, args...)
	if _, err := tx.NewDelete().Model((*attemptRow)(nil)).Where("delivery_id IN (?)", ids).Exec(ctx); err != nil {
		return 0, fmt.Errorf("erase delivery attempts of %s: %w", e.User, err)
	}
	res, err := tx.NewDelete().Model((*deliveryRow)(nil)).Where(where, args...).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("erase deliveries of %s: %w", e.User, err)
	}
	return affected(res)
}

func countEvents(ctx context.Context, db *DB, idb bun.IDB, user string) (int64, error) {
	where, args := userSubjects(db, user)
	n, err := idb.NewSelect().Model((*eventRow)(nil)).Where(where, args...).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count events of %s: %w", user, err)
	}
	return int64(n), nil
}

// eraseEvents deletes the outbox's events of user's images and tokens
// not fanned out yet.
func eraseEvents(ctx context.Context, db *DB, tx bun.Tx, e *erasureRow) (int64, error) {
	where, args := userSubjects(db, e.User)
	res, err := tx.NewDelete().Model((*eventRow)(nil)).Where(where, args...).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("erase events of %s: %w", e.User, err)
	}
	return affected(res)
}

// countRows counts the rows of user in table (its user_name column).
func countRows(table string) func(context.Context, *DB, bun.IDB, string) (int64, error) {
	return func(ctx context.Context, _ *DB, idb bun.IDB, user string) (int64, error) {
		n, err := idb.NewSelect().Table(table).Where("user_name = ?", user).Count(ctx)
		if err != nil {
			return 0, fmt.Errorf("count %s of %s: %w", table, user, err)
		}
		return int64(n), nil
	}
}

// deleteRows deletes the rows of user in table, of the images ids when
// ids is not nil.
func deleteRows(ctx context.Context, tx bun.Tx, table, user string, ids []string) (int64, error) {
	q := tx.NewDelete().Table(table).Where("user_name = ?", user)
	if ids != nil {
		q = q.Where("identifier IN (?)", bun.List(ids))
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("erase %s of %s: %w", table, user, err)
	}
	return affected(res)
}

// rowsOfImages is the part of a table keyed by user and image that names
// no blob.
func rowsOfImages(kind, table string) imagePart {
	return imagePart{kind, countRows(table), func(ctx context.Context, _ *DB, tx bun.Tx, user string, ids []string) (int64, error) {
		return deleteRows(ctx, tx, table, user, ids)
	}}
}

// rowsOfUser is the part of a table with a user_name column whose rows
// name no blob.
func rowsOfUser(kind, table string) userPart {
	return userPart{kind, countRows(table), func(ctx context.Context, _ *DB, tx bun.Tx, e *erasureRow) (int64, error) {
		return deleteRows(ctx, tx, table, e.User, nil)
	}}
}

// eraseVariants deletes the variant records of the images and queues
// their blobs.
func eraseVariants(ctx context.Context, db *DB, tx bun.Tx, user string, ids []string) (int64, error) {
	var rows []variantRow
	q := tx.NewSelect().Model(&rows).Column("user_name", "identifier", "hash", "blob_token").Where("user_name = ?", user)
	if ids != nil {
		q = q.Where("identifier IN (?)", bun.List(ids))
	}
	if err := q.Scan(ctx); err != nil {
		return 0, fmt.Errorf("erase variants of %s: %w", user, err)
	}
	keys := make([]string, len(rows))
	for i := range rows {
		keys[i] = rows[i].key()
	}
	n, err := deleteRows(ctx, tx, "variants", user, ids)
	if err != nil {
		return 0, err
	}
	return n, db.enqueue(ctx, tx, keys, false, time.Now())
}

// eraseVariations deletes the stored variation records of the images and
// queues their blobs.
func eraseVariations(ctx context.Context, db *DB, tx bun.Tx, user string, ids []string) (int64, error) {
	var rows []variationRow
	q := tx.NewSelect().Model(&rows).Where("user_name = ?", user)
	if ids != nil {
		q = q.Where("identifier IN (?)", bun.List(ids))
	}
	if err := q.Scan(ctx); err != nil {
		return 0, fmt.Errorf("erase variations of %s: %w", user, err)
	}
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = VariationKey(r.User, r.Identifier, r.BlobToken, r.Width, r.Ext)
	}
	n, err := deleteRows(ctx, tx, "variations", user, ids)
	if err != nil {
		return 0, err
	}
	return n, db.enqueue(ctx, tx, keys, false, time.Now())
}

// userMetrics are the usage counters labelled by user name.
var userMetrics = []string{MetricUploads, MetricUploadBytes}

func countUsage(ctx context.Context, _ *DB, idb bun.IDB, user string) (int64, error) {
	n, err := idb.NewSelect().Model((*usageRow)(nil)).
		Where("metric IN (?) AND label = ?", bun.List(userMetrics), user).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count usage of %s: %w", user, err)
	}
	return int64(n), nil
}

func eraseUsage(ctx context.Context, _ *DB, tx bun.Tx, e *erasureRow) (int64, error) {
	res, err := tx.NewDelete().Model((*usageRow)(nil)).
		Where("metric IN (?) AND label = ?", bun.List(userMetrics), e.User).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("erase usage of %s: %w", e.User, err)
	}
	return affected(res)
}

// scopedWebhooks returns the subscriptions whose users name user (not
// "*"), without opening their secrets.
func scopedWebhooks(ctx context.Context, idb bun.IDB, user string) ([]webhookRow, [][]string, error) {
	var rows []webhookRow
	if err := idb.NewSelect().Model(&rows).Column("id", "url", "events", "users", "active").
		Order("id").Scan(ctx); err != nil {
		return nil, nil, fmt.Errorf("webhooks of %s: %w", user, err)
	}
	var out []webhookRow
	var users [][]string
	for _, r := range rows {
		var us []string
		if err := json.Unmarshal([]byte(r.Users), &us); err != nil {
			return nil, nil, fmt.Errorf("webhook %s users: %w", r.ID, err)
		}
		if slices.Contains(us, user) {
			out = append(out, r)
			users = append(users, us)
		}
	}
	return out, users, nil
}

func countWebhooks(ctx context.Context, _ *DB, idb bun.IDB, user string) (int64, error) {
	rows, _, err := scopedWebhooks(ctx, idb, user)
	return int64(len(rows)), err
}

// eraseWebhooks takes the user out of every subscription that names it,
// and deletes (with its deliveries) a subscription it was the only user
// of; each change is audited as the API's would be, by the erasure's
// actor.
func eraseWebhooks(ctx context.Context, db *DB, tx bun.Tx, e *erasureRow) (int64, error) {
	rows, users, err := scopedWebhooks(ctx, tx, e.User)
	if err != nil {
		return 0, err
	}
	for i, r := range rows {
		rest := slices.DeleteFunc(slices.Clone(users[i]), func(u string) bool { return u == e.User })
		if len(rest) == 0 {
			if _, err := tx.NewDelete().Model((*webhookRow)(nil)).Where("id = ?", r.ID).Exec(ctx); err != nil {
				return 0, err
			}
			if err := db.deleteSink(ctx, tx, WebhookSink(r.ID)); err != nil {
				return 0, err
			}
			if err := db.audit(ctx, tx, auditEvent{"webhook.delete", r.ID, map[string]any{"erasure": e.ID}}); err != nil {
				return 0, err
			}
			continue
		}
		b, _ := json.Marshal(rest) // []string never fails
		if _, err := tx.NewUpdate().Model((*webhookRow)(nil)).Set("users = ?", string(b)).
			Set("updated = ?", time.Now().UnixMicro()).Where("id = ?", r.ID).Exec(ctx); err != nil {
			return 0, err
		}
		var events []string
		_ = json.Unmarshal([]byte(r.Events), &events) // written by webhookRow: a JSON array
		detail := webhookDetail(Webhook{URL: r.URL, Events: events, Users: rest, Active: r.Active})
		detail["erasure"] = e.ID
		if err := db.audit(ctx, tx, auditEvent{"webhook.update", r.ID, detail}); err != nil {
			return 0, err
		}
	}
	return int64(len(rows)), nil
}

// userData counts, per kind, what the database holds of user: its images
// and the rows of every part.
func (db *DB) userData(ctx context.Context, idb bun.IDB, user string) (map[string]int64, error) {
	out := map[string]int64{}
	n, err := countRows("images")(ctx, db, idb, user)
	if err != nil {
		return nil, err
	}
	out["images"] = n
	for _, p := range imageParts {
		if out[p.kind], err = p.count(ctx, db, idb, user); err != nil {
			return nil, err
		}
	}
	for _, p := range userParts {
		if out[p.kind], err = p.count(ctx, db, idb, user); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// userPrefixes are the blob key prefixes that hold only user's blobs.
func userPrefixes(user string) []string {
	return []string{"images/" + user + "/", "variants/" + user + "/", "variations/" + user + "/"}
}
