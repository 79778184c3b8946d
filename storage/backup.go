package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A backup (Backup) is a folder or bucket holding snapshots of one store,
// its blobs kept once by content:
//
//	blobs/<sha256[:2]>/<sha256>          every blob's bytes, under their SHA-256
//	snapshots/<20261203T140501Z>/vitrine.db     the SQLite database at the snapshot
//	snapshots/<20261203T140501Z>/secret         the data folder's secret, when it has one
//	snapshots/<20261203T140501Z>/manifest.json  written last: the snapshot is complete
//
// The database is copied with SQLite's VACUUM INTO, one read transaction
// (PostgreSQL and MySQL: their rows from one repeatable-read transaction
// into an SQLite file, backupdump.go), while the server goes on; deletions of blobs are held meanwhile
// (HoldBlobDeletions), so that every blob the snapshot names is still
// there when the backup reads it. A second backup reads again only the
// blobs whose key, size or time changed, and writes only those it does not
// hold yet.

// BackupFormat is the layout version a manifest names.
const BackupFormat = 1

// BackupManifest describes one snapshot.
type BackupManifest struct {
	Format int `json:"format"`
	// Taken is the snapshot point: every change committed before it is in
	// the snapshot, none after it.
	Taken    time.Time    `json:"taken"`
	Database BackupFile   `json:"database"`
	Secret   *BackupFile  `json:"secret,omitempty"`
	Blobs    []BackupBlob `json:"blobs"`
}

// BackupFile is a file of a snapshot and its checksum.
type BackupFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// BackupBlob is one blob of the store: its key, and its bytes' checksum
// (their key under blobs/).
type BackupBlob struct {
	Key     string    `json:"key"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
	SHA256  string    `json:"sha256"`
}

// BackupReport is what Backup or Restore did.
type BackupReport struct {
	Snapshot string `json:"snapshot"`
	// The snapshot is the store at one moment from Taken to Until: every
	// change acknowledged before Taken is in it, no change begun after
	// Until.
	Taken time.Time `json:"taken"`
	Until time.Time `json:"until"`
	// Blobs and Bytes are the snapshot's blobs; Copied and CopiedBytes
	// those this run wrote (the rest the backup held already).
	Blobs       int     `json:"blobs"`
	Bytes       int64   `json:"bytes"`
	Copied      int     `json:"copied"`
	CopiedBytes int64   `json:"copiedBytes"`
	Seconds     float64 `json:"seconds"`
	// Failed names what could not be copied, and why.
	Failed []string     `json:"failed,omitempty"`
	Check  *CheckReport `json:"check,omitempty"`
}

// BackupOptions are a backup's inputs besides the stores.
type BackupOptions struct {
	// SecretFile is the data folder's secret, copied with the snapshot;
	// empty when the secret comes from the configuration (keep it there).
	SecretFile string
	// TempDir holds the database copy while it is written (default: the
	// system's).
	TempDir string
	// Progress, when set, is told how the blobs advance.
	Progress func(phase string, done, total int64)
}

// backupBlobKey is where a backup keeps the bytes whose SHA-256 is sum.
func backupBlobKey(sum string) string { return "blobs/" + sum[:2] + "/" + sum }

// snapshotPrefix is where a backup keeps the snapshot name.
func snapshotPrefix(name string) string { return "snapshots/" + name + "/" }

// Backup writes a snapshot of db and blobs to dest (the backup's own blob
// store). It returns what it did; an error when the snapshot is not
// complete (its manifest then is not written, and a later backup reuses
// the blobs it copied).
func Backup(ctx context.Context, db *DB, blobs *Blobs, dest *Blobs, opts BackupOptions) (*BackupReport, error) {
	start := time.Now()
	release, err := db.HoldBlobDeletions(ctx, time.Minute)
	if err != nil {
		return nil, err
	}
	defer release()
	prev, err := latestManifest(ctx, dest)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(opts.TempDir, "vitrine-backup-")
	if err != nil {
		return nil, fmt.Errorf("storage: backup: %w", err)
	}
	defer os.RemoveAll(tmp)
	dbFile := filepath.Join(tmp, "vitrine.db")
	taken, until, err := snapshotDB(ctx, db, dbFile)
	if err != nil {
		return nil, fmt.Errorf("storage: backup: snapshot the database: %w", err)
	}
	done := until.Add(blobSlack)
	name := taken.Format("20060102T150405.000000Z")
	m := BackupManifest{Format: BackupFormat, Taken: taken}
	r := &BackupReport{Snapshot: name, Taken: taken, Until: until}
	if m.Blobs, err = copyBlobs(ctx, blobs, dest, prev, done, r, opts.Progress); err != nil {
		return r, err
	}
	if m.Database, err = putFile(ctx, dest, snapshotPrefix(name)+"vitrine.db", dbFile); err != nil {
		return r, err
	}
	if opts.SecretFile != "" {
		f, err := putFile(ctx, dest, snapshotPrefix(name)+"secret", opts.SecretFile)
		if err != nil {
			return r, err
		}
		m.Secret = &f
	}
	if len(r.Failed) > 0 {
		return r, fmt.Errorf("storage: backup: %d blobs not copied (snapshot %s left without its manifest)", len(r.Failed), name)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return r, err
	}
	if err := dest.Put(ctx, snapshotPrefix(name)+"manifest.json", b); err != nil {
		return r, fmt.Errorf("storage: backup: write the manifest: %w", err)
	}
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// snapshotDB writes db at one moment, between taken and until, into the
// SQLite file path: with VACUUM INTO, one read transaction, for SQLite;
// through dumpSQLite for PostgreSQL and MySQL.
func snapshotDB(ctx context.Context, db *DB, path string) (taken, until time.Time, err error) {
	if db.kind != sqliteKind {
		return dumpSQLite(ctx, db, path)
	}
	// The snapshot is VACUUM INTO's read transaction, which begins
	// between taken and until: a change acknowledged before taken is in
	// it, and a blob it names was written before until (before the commit
	// that names it). The blobs' times may come from another clock (a
	// bucket's): blobSlack more are copied, which a restore keeps as
	// young orphans that fsck collects.
	taken = time.Now().UTC()
	// Why unbounded: the copy of a large database outlasts the
	// statement timeout.
	_, err = db.bun.ExecContext(unbounded(ctx), "VACUUM INTO ?", path)
	return taken, time.Now().UTC(), err
}

// blobSlack is how much later than the snapshot a blob may seem to be
// written and still be copied: for a blob store whose clock is not this
// machine's.
const blobSlack = 2 * time.Second

// copyBlobs copies every blob of src to dest by content, but for the
// parts of resumable uploads (in flight, not part of any image) and the
// blobs written after until (which the snapshot cannot name). A blob the previous snapshot
// prev had with the same key, size and time keeps its checksum and is
// not read again.
func copyBlobs(ctx context.Context, src, dest *Blobs, prev *BackupManifest, until time.Time, r *BackupReport, progress func(string, int64, int64)) ([]BackupBlob, error) {
	known := map[string]BackupBlob{}
	if prev != nil {
		for _, b := range prev.Blobs {
			known[b.Key] = b
		}
	}
	var out []BackupBlob
	held := map[string]bool{}
	err := src.List(ctx, "", func(o BlobInfo) error {
		if strings.HasPrefix(o.Key, uploadsPrefix) || o.ModTime.After(until) {
			return nil
		}
		b := BackupBlob{Key: o.Key, Size: o.Size, ModTime: o.ModTime}
		if k, ok := known[o.Key]; ok && k.Size == o.Size && k.ModTime.Equal(o.ModTime) {
			b.SHA256 = k.SHA256
			held[b.SHA256] = true // the previous backup wrote it
		} else {
			sum, size, err := backUpContent(ctx, src, dest, o.Key, held, r)
			if errors.Is(err, ErrNotExist) {
				return nil // deleted before the hold: the snapshot cannot name it
			}
			if err != nil {
				r.Failed = append(r.Failed, o.Key+": "+err.Error())
				return nil
			}
			b.SHA256, b.Size = sum, size
		}
		out = append(out, b)
		r.Blobs++
		r.Bytes += b.Size
		if progress != nil {
			progress("blobs", int64(r.Blobs), 0)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: backup: list the blobs: %w", err)
	}
	return out, nil
}

// backUpContent reads the blob key of src and writes its bytes to dest
// under their SHA-256, unless held (the sums dest is known to have) or
// dest has them; it returns the sum and the size.
func backUpContent(ctx context.Context, src, dest *Blobs, key string, held map[string]bool, r *BackupReport) (string, int64, error) {
	data, err := src.Get(ctx, key)
	if err != nil {
		return "", 0, err
	}
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	if !held[sum] {
		ok, err := dest.Exists(ctx, backupBlobKey(sum))
		if err == nil && !ok {
			if err = dest.Put(ctx, backupBlobKey(sum), data); err == nil {
				r.Copied++
				r.CopiedBytes += int64(len(data))
			}
		}
		if err != nil {
			return "", 0, err
		}
		held[sum] = true
	}
	return sum, int64(len(data)), nil
}

// putFile writes the local file path to dest at key, and returns its
// name and checksum.
func putFile(ctx context.Context, dest *Blobs, key, path string) (BackupFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return BackupFile{}, fmt.Errorf("storage: backup: %w", err)
	}
	if err := dest.Put(ctx, key, data); err != nil {
		return BackupFile{}, fmt.Errorf("storage: backup: write %s: %w", key, err)
	}
	sum := sha256.Sum256(data)
	return BackupFile{Name: filepath.Base(key), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
}

// Snapshots returns the names of the complete snapshots of a backup,
// oldest first.
func Snapshots(ctx context.Context, backup *Blobs) ([]string, error) {
	var names []string
	err := backup.List(ctx, "snapshots/", func(o BlobInfo) error {
		if rest, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, "snapshots/"), "/manifest.json"); ok && !strings.Contains(rest, "/") {
			names = append(names, rest)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: list snapshots: %w", err)
	}
	slices.Sort(names)
	return names, nil
}

// ReadManifest returns the manifest of the snapshot name.
func ReadManifest(ctx context.Context, backup *Blobs, name string) (*BackupManifest, error) {
	b, err := backup.Get(ctx, snapshotPrefix(name)+"manifest.json")
	if err != nil {
		return nil, fmt.Errorf("storage: snapshot %s: %w", name, err)
	}
	var m BackupManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("storage: snapshot %s: manifest: %w", name, err)
	}
	if m.Format != BackupFormat {
		return nil, fmt.Errorf("storage: snapshot %s has format %d; this vitrine reads %d: %w", name, m.Format, BackupFormat, ErrInvalid)
	}
	return &m, nil
}

// latestManifest returns the newest complete snapshot's manifest, or nil
// for a backup that has none.
func latestManifest(ctx context.Context, backup *Blobs) (*BackupManifest, error) {
	names, err := Snapshots(ctx, backup)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	return ReadManifest(ctx, backup, names[len(names)-1])
}

// RestoreTarget is the empty store a snapshot is restored into: the
// SQLite file to write (it must not exist), its blob store (it must hold
// nothing but what a restore of the same snapshot that stopped wrote),
// and where the snapshot's secret goes (empty: the
// configuration holds the secret).
type RestoreTarget struct {
	DatabaseFile string
	Blobs        *Blobs
	SecretFile   string
}

// Restore writes the snapshot name of backup into t, checking every
// file's checksum, and returns what it did. The database is then opened
// (and migrated) with opts by the caller, who checks it (Check).
func Restore(ctx context.Context, backup *Blobs, name string, t RestoreTarget, progress func(string, int64, int64)) (*BackupReport, error) {
	start := time.Now()
	m, err := ReadManifest(ctx, backup, name)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(t.DatabaseFile); err == nil {
		return nil, fmt.Errorf("storage: restore: %s exists: restore into an empty data folder (or a configuration naming a new database file): %w", t.DatabaseFile, ErrInvalid)
	}
	// A target holding blobs of this snapshot only is a restore that
	// stopped half-way: it goes on, copying what is missing.
	inSnapshot := make(map[string]BackupBlob, len(m.Blobs))
	for _, b := range m.Blobs {
		inSnapshot[b.Key] = b
	}
	there := map[string]bool{}
	err = t.Blobs.List(ctx, "", func(o BlobInfo) error {
		if b, ok := inSnapshot[o.Key]; !ok || b.Size != o.Size {
			return fmt.Errorf("storage: restore: the target blob store holds %s, which is not of this snapshot: restore into an empty one: %w", o.Key, ErrInvalid)
		}
		there[o.Key] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	r := &BackupReport{Snapshot: name, Taken: m.Taken}
	if m.Secret != nil && t.SecretFile != "" {
		data, err := getVerified(ctx, backup, snapshotPrefix(name)+"secret", m.Secret.SHA256)
		if err != nil {
			return r, fmt.Errorf("storage: restore: %w", err)
		}
		if old, err := os.ReadFile(t.SecretFile); err == nil && strings.TrimSpace(string(old)) != strings.TrimSpace(string(data)) {
			return r, fmt.Errorf("storage: restore: %s holds another secret than the snapshot's: the restored keys and webhook secrets could not be read; move it away first: %w", t.SecretFile, ErrInvalid)
		}
		if err := writeFileAtomic(t.SecretFile, data, 0o600); err != nil {
			return r, fmt.Errorf("storage: restore: %w", err)
		}
	}
	for i, b := range m.Blobs {
		r.Blobs++
		r.Bytes += b.Size
		if progress != nil {
			progress("blobs", int64(i+1), int64(len(m.Blobs)))
		}
		if there[b.Key] {
			continue
		}
		data, err := getVerified(ctx, backup, backupBlobKey(b.SHA256), b.SHA256)
		if err == nil {
			err = t.Blobs.Put(ctx, b.Key, data)
		}
		if err != nil {
			r.Failed = append(r.Failed, b.Key+": "+err.Error())
			continue
		}
		r.Copied++
		r.CopiedBytes += int64(len(data))
	}
	if len(r.Failed) > 0 {
		return r, fmt.Errorf("storage: restore: %d blobs not restored (the database is left out; run the restore again)", len(r.Failed))
	}
	data, err := getVerified(ctx, backup, snapshotPrefix(name)+"vitrine.db", m.Database.SHA256)
	if err != nil {
		return r, fmt.Errorf("storage: restore: %w", err)
	}
	if err := writeFileAtomic(t.DatabaseFile, data, 0o600); err != nil {
		return r, fmt.Errorf("storage: restore: %w", err)
	}
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// getVerified reads key of backup and checks that its SHA-256 is sum.
func getVerified(ctx context.Context, backup *Blobs, key, sum string) ([]byte, error) {
	data, err := backup.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	got := sha256.Sum256(data)
	if hex.EncodeToString(got[:]) != sum {
		return nil, fmt.Errorf("%s: checksum %x, the manifest says %s: the backup is damaged", key, got, sum)
	}
	return data, nil
}

// writeFileAtomic writes data to path through a temporary file renamed
// over it, creating the folder.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".restoring"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// holdKey is the blob_queue row of a hold on blob deletions: a
// reservation of a key no blob has, so that a hold whose holder died
// expires as a reservation does, and is collected.
const holdKey = "holds/backup"

// HoldBlobDeletions stops every instance's collector from deleting blobs
// until release is called (or, if the caller dies, lease after its last
// renewal): a backup then finds every blob its snapshot names. The
// deletions due meanwhile wait and go after.
func (db *DB) HoldBlobDeletions(ctx context.Context, lease time.Duration) (release func(), err error) {
	now := time.Now()
	row := queueRow{Key: holdKey, Due: now.Add(lease).UnixMicro(), Created: now.UnixMicro()}
	if _, err := db.bun.NewInsert().Model(&row).Exec(ctx); err != nil {
		return nil, fmt.Errorf("storage: hold blob deletions: %w", err)
	}
	stop := renewing(lease/3, func() {
		_, _ = db.bun.NewUpdate().Model((*queueRow)(nil)).Set("due = ?", time.Now().Add(lease).UnixMicro()).
			Where("id = ?", row.ID).Exec(context.WithoutCancel(ctx))
	})
	return func() {
		stop()
		_, _ = db.bun.NewDelete().Model((*queueRow)(nil)).Where("id = ?", row.ID).Exec(context.WithoutCancel(ctx))
	}, nil
}

// DropHolds removes every hold on blob deletions: a restored snapshot's,
// taken by the backup that made it.
func (db *DB) DropHolds(ctx context.Context) error {
	_, err := db.bun.NewDelete().Model((*queueRow)(nil)).Where("blob_key = ?", holdKey).Exec(ctx)
	return err
}

// errHeld is a blob deletion put off by a hold.
var errHeld = errors.New("a backup or a copy holds blob deletions; this one waits for its end")

// blobsHeld reports whether a hold on blob deletions is in force.
func (db *DB) blobsHeld(ctx context.Context) (bool, error) {
	n, err := db.bun.NewSelect().Model((*queueRow)(nil)).
		Where("blob_key = ? AND due > ?", holdKey, time.Now().UnixMicro()).Count(ctx)
	return n > 0, err
}
