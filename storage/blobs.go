package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // registers file://
	_ "gocloud.dev/blob/memblob"  // registers mem://
	_ "gocloud.dev/blob/s3blob"   // registers s3://
	"gocloud.dev/gcerrors"
)

// Blobs stores image bytes and cached variants in a gocloud.dev bucket.
// It is safe for concurrent use.
type Blobs struct {
	bucket  *blob.Bucket
	observe ObserveFunc // nil when off
}

// OpenBlobs opens the bucket named by rawURL:
//
//	file:///abs/dir   the directory is created; writes go to a temporary
//	                  file beside the target and are renamed into place, and
//	                  no .attrs sidecar files are written
//	mem://            an in-memory bucket, for tests
//	s3://bucket?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true
//	                  credentials come from AWS_ACCESS_KEY_ID and
//	                  AWS_SECRET_ACCESS_KEY (or the usual AWS sources)
//
// For file URLs the defaults create_dir, no_tmp_dir and metadata=skip are
// added unless the URL sets them. Why no_tmp_dir: renaming from os.TempDir
// fails when it is on another file system.
func OpenBlobs(ctx context.Context, rawURL string) (*Blobs, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("storage: open blobs: %w", err)
	}
	if u.Scheme == "file" {
		q := u.Query()
		for k, v := range map[string]string{"create_dir": "true", "no_tmp_dir": "true", "metadata": "skip"} {
			if !q.Has(k) {
				q.Set(k, v)
			}
		}
		u.RawQuery = q.Encode()
	}
	b, err := blob.OpenBucket(ctx, u.String())
	if err != nil {
		return nil, fmt.Errorf("storage: open blobs %s: %w", u.Redacted(), err)
	}
	return &Blobs{bucket: b}, nil
}

// ImageKey is the blob key of an image's bytes.
func ImageKey(user, id string) string { return "images/" + user + "/" + id }

// VariantPrefix is the key prefix of every cached variant of an image.
func VariantPrefix(user, id string) string { return "variants/" + user + "/" + id + "/" }

// VariantKey is the blob key of one cached variant of an image; hash
// identifies the transformation chain and output type.
func VariantKey(user, id, hash string) string { return VariantPrefix(user, id) + hash }

// Put writes data at key, all or nothing: when the write fails or ctx is
// cancelled, the previous blob (or its absence) stays. The content type is
// detected from data where the backend stores one.
func (b *Blobs) Put(ctx context.Context, key string, data []byte) (err error) {
	defer b.timed("put", time.Now(), &err)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.bucket.NewWriter(wctx, key, nil)
	if err != nil {
		return fmt.Errorf("storage: put blob %s: %w", key, err)
	}
	if _, err := w.Write(data); err != nil {
		cancel() // aborts the write: Close then discards it
		_ = w.Close()
		return fmt.Errorf("storage: put blob %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("storage: put blob %s: %w", key, err)
	}
	return nil
}

// wrap maps gocloud's not-found to ErrNotExist.
func wrap(op, key string, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("storage: %s %s: %w", op, key, ErrNotExist)
	}
	return fmt.Errorf("storage: %s %s: %w", op, key, err)
}

// Get reads the blob at key; ErrNotExist when there is none.
func (b *Blobs) Get(ctx context.Context, key string) ([]byte, error) {
	return b.GetInto(ctx, key, nil)
}

// GetInto is Get reading into buf's memory when the blob fits its
// capacity (a new buffer otherwise), so a caller can reuse buffers.
func (b *Blobs) GetInto(ctx context.Context, key string, buf []byte) (_ []byte, err error) {
	defer b.timed("get", time.Now(), &err)
	r, err := b.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, wrap("get blob", key, err)
	}
	defer r.Close()
	data, err := readSized(r, r.Size(), buf)
	if err != nil {
		return nil, wrap("get blob", key, err)
	}
	return data, nil
}

// readSized reads r to the end into one buffer of the announced size (buf's
// memory when it has the capacity), so a multi-megabyte source costs one
// allocation at most instead of io.ReadAll's growing copies; it still reads
// whatever follows when size was wrong.
func readSized(r io.Reader, size int64, buf []byte) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	data := buf[:0]
	if int64(cap(data)) < size {
		data = make([]byte, size)
	}
	data = data[:size]
	n, err := io.ReadFull(r, data)
	switch {
	case err == io.ErrUnexpectedEOF:
		return data[:n], nil
	case err != nil:
		return nil, err
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return append(data, rest...), nil
}

// Open returns a reader for the blob at key, for streaming; the caller
// closes it. ErrNotExist when there is none.
func (b *Blobs) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := b.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, wrap("open blob", key, err)
	}
	return r, nil
}

// Attributes returns the size and modification time of the blob at key;
// ErrNotExist when there is none.
func (b *Blobs) Attributes(ctx context.Context, key string) (size int64, modTime time.Time, err error) {
	a, err := b.bucket.Attributes(ctx, key)
	if err != nil {
		return 0, time.Time{}, wrap("blob attributes", key, err)
	}
	return a.Size, a.ModTime.UTC(), nil
}

// Exists reports whether there is a blob at key.
func (b *Blobs) Exists(ctx context.Context, key string) (bool, error) {
	ok, err := b.bucket.Exists(ctx, key)
	if err != nil {
		return false, fmt.Errorf("storage: blob exists %s: %w", key, err)
	}
	return ok, nil
}

// Delete removes the blob at key; a missing blob is not an error.
func (b *Blobs) Delete(ctx context.Context, key string) (err error) {
	defer b.timed("delete", time.Now(), &err)
	if err := b.bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("storage: delete blob %s: %w", key, err)
	}
	return nil
}

// DeletePrefix removes every blob whose key starts with prefix.
func (b *Blobs) DeletePrefix(ctx context.Context, prefix string) error {
	if prefix == "" {
		return fmt.Errorf("storage: delete blobs: empty prefix: %w", ErrInvalid)
	}
	it := b.bucket.List(&blob.ListOptions{Prefix: prefix})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("storage: delete blobs %s: %w", prefix, err)
		}
		if obj.IsDir {
			continue
		}
		if err := b.Delete(ctx, obj.Key); err != nil {
			return err
		}
	}
}

// Ping checks that the bucket can be reached.
func (b *Blobs) Ping(ctx context.Context) error {
	ok, err := b.bucket.IsAccessible(ctx)
	if err != nil {
		return fmt.Errorf("storage: ping blobs: %w", err)
	}
	if !ok {
		return errors.New("storage: ping blobs: bucket is not accessible")
	}
	return nil
}

// Close releases the bucket.
func (b *Blobs) Close() error {
	if err := b.bucket.Close(); err != nil {
		return fmt.Errorf("storage: close blobs: %w", err)
	}
	return nil
}
