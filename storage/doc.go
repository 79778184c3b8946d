// Package storage persists vitrine's data: image records, metadata, short
// URLs, public keys, resource groups and access rules in SQL through bun
// (SQLite, PostgreSQL, MySQL/MariaDB), and image bytes through gocloud.dev
// blob buckets (file, mem, s3, gs, azblob). The conformance suites in
// storagetest are run by every backend.
//
// # The invariant
//
// A row that the API lists always names a blob that exists; a blob that no
// row names is garbage that something will collect. It holds by
// construction, whatever the order of concurrent requests and instances,
// and whatever fails on the way:
//
//   - Blobs are never overwritten, nor deleted by a key guessed from an
//     identifier. Every upload writes its bytes under a key of its own,
//     images/<user>/<id>.<token>, with a fresh token (NewBlobToken) that
//     the image's row records; its variants live under
//     variants/<user>/<id>.<token>/. A delete racing a re-upload of the same
//     bytes can only ever touch the blob its row named.
//   - Before a blob is written, its key is reserved: a row in blob_queue due
//     a lease later (Reserve; Options.ReservationLease). The transaction
//     that commits the row naming the blob claims the reservation (deletes
//     it, but only while no collector has taken it). A write that fails, a process that dies, an
//     upload that meets an existing row: the reservation stays (or is
//     released) and the collector deletes the blob.
//   - A delete removes the row and, in the same transaction, queues the
//     deletion of the blobs it named (DeleteImage, VariantCache.Purge,
//     eviction). The request answers once that commits; a Collector, which
//     every instance drains (package main's workers), deletes the blobs
//     with retries and backoff. Two collectors never take one queue row at
//     once: taking a row is a compare-and-swap on its attempts.
//   - A variant is recorded in a transaction that locks its image's row and
//     checks the image's token, so a variant rendered from an image deleted
//     meanwhile is never recorded, and its reserved blob is collected.
//   - Stored variations (variations.go) follow the same pattern: the job to
//     build them is a variation_jobs row written in the transaction that
//     commits the image (CommitImage, when its caller wants them);
//     DrainVariationJobs, which every instance runs, takes due jobs by
//     compare-and-swap and hands each to its caller's build, and
//     StoreVariations writes the copies under reservations at
//     variations/<user>/<id>.<token>/<width>.<ext> and records them in a
//     transaction that checks the image's token. A delete drops their rows
//     and queues their blobs; fsck checks them as it checks variants
//     (fsck_variations.go).
//   - Erasures of users (erasures.go, erasure_step.go) follow it too: each
//     batch deletes a user's image rows and the rows of every table that
//     belongs to them, and queues the blobs they named, in one
//     transaction; an erasure is done only once the blob queue and a
//     listing of the store hold nothing under the user's keys.
//   - Events (events.go) follow it too: while SetEvents is on, every change
//     the audit log records writes its event row in the same transaction;
//     DrainEvents takes due rows by compare-and-swap, never one whose
//     subject has an older row left, hands each to its caller's
//     delivery, and deletes the delivered ones in the transaction that
//     writes their fan-out (deliveries.go).
//   - Quotas (quotas.go) are checked in the transaction that commits an
//     image, right after it has taken its user's row of image_counts, and
//     in the one that records a variant, which holds its image's row: a
//     refused commit writes nothing and its reserved blob is collected.
//
// `vitrine fsck` (Check) compares the two sides and reports (and with
// --repair, fixes) whatever breaks the invariant: a lost blob, a blob no
// row names once older than a grace period, variant records whose image or
// blob is gone.
//
// Every blob operation and every statement is bounded by a timeout
// (Blobs.SetTimeout, Options.QueryTimeout): a backend that stalls fails the
// operation with an *UnavailableError (503) instead of holding it.
//
// # Schema migrations
//
// The schema is a list of numbered steps (Migration), applied in order by
// Open (unless Options.SkipMigrate) and by `vitrine migrate`, and recorded
// in the schema_migrations table. Several instances starting at once on one
// database apply each step exactly once: they serialize on a lock
// (PostgreSQL pg_advisory_lock, MySQL GET_LOCK, SQLite's write lock taken by
// BEGIN IMMEDIATE). A database whose last step is newer than this binary
// knows is refused with ErrSchemaTooNew. A database made before versioned
// migrations (the tables of step 1 and no schema_migrations) is recorded as
// being at step 1.
//
// Steps in use: 1 initial schema (schema.go), 2 image version counter, 3
// variant cache table, 4 listing indexes, 5 admin UI sessions, 6 per-user
// image counts and descending listing indexes, 7 blob deletion queue, 8
// image blob tokens, 9 variant blob tokens, 10 audit log, usage counters,
// key creation time and session address (audit.go, usage.go), 11 image
// insertion order, 12 image frames, 13 image properties (analysis), 14
// variation jobs, 15 stored variations, 16 variant chains, 17 events, 18
// webhooks and deliveries, 20 per-user quotas, 28 video columns. To add step N, add one file,
// stepNNNN_what.go, that registers it:
//
//	func init() {
//		register(Migration{
//			Version:  10,
//			Name:     "tags",
//			SQLite:   []string{`CREATE TABLE tags (...)`},
//			Postgres: []string{`CREATE TABLE tags (...)`},
//			MySQL:    []string{`CREATE TABLE tags (...) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`},
//		})
//	}
//
// Rules for a step: never edit a step that has been released, add one; take
// the next free number (a duplicate panics at init and a gap fails
// TestMigrationSteps); give every dialect its statements; use the column
// conventions of step 1 (times as BIGINT unix microseconds, "C" collation
// on PostgreSQL, utf8mb4_bin and VARCHAR(255) keys on MySQL). On SQLite and
// PostgreSQL a step's statements and its schema_migrations row commit in one
// transaction. MySQL commits every DDL statement on its own, so there a step
// that fails half-way leaves its first statements applied: prefer one
// statement per MySQL step (one ALTER TABLE can add several columns and
// indexes). The storagetest migration suite runs every step on every
// dialect, from an empty database and from step 1.
package storage
