package storage

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // registers azblob://
	_ "gocloud.dev/blob/fileblob"  // registers file://
	_ "gocloud.dev/blob/gcsblob"   // registers gs://
	_ "gocloud.dev/blob/memblob"   // registers mem://
	_ "gocloud.dev/blob/s3blob"    // registers s3://
	"gocloud.dev/gcerrors"
)

// DefaultBlobTimeout bounds each blob operation unless SetTimeout says
// otherwise.
const DefaultBlobTimeout = 5 * time.Second

// Blobs stores image bytes and cached variants in a gocloud.dev bucket.
// It is safe for concurrent use.
//
// Every operation is bounded by a timeout (DefaultBlobTimeout, or
// SetTimeout's): a store that stalls fails the operation with an
// *UnavailableError instead of holding the caller.
type Blobs struct {
	bucket    *blob.Bucket
	observe   ObserveFunc                                     // nil when off
	intercept func(ctx context.Context, op, key string) error // nil when off
	timeout   time.Duration
	pageSize  int    // List's page size; 0 for defaultListPage
	dir       string // a folder's path (file://), which List walks itself
}

// defaultListPage is how many keys List asks the store for at a time.
const defaultListPage = 1000

// OpenBlobs opens the bucket named by rawURL:
//
//	file:///abs/dir   the directory is created; writes go to a temporary
//	                  file beside the target and are renamed into place, and
//	                  no .attrs sidecar files are written
//	mem://            an in-memory bucket, for tests
//	s3://bucket?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true
//	                  credentials come from AWS_ACCESS_KEY_ID and
//	                  AWS_SECRET_ACCESS_KEY (or the usual AWS sources)
//	gs://bucket       Google Cloud Storage; credentials are Application
//	                  Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, or
//	                  the instance's service account); STORAGE_EMULATOR_HOST
//	                  (host:port) points it at an emulator such as
//	                  fake-gcs-server, without credentials
//	azblob://container
//	                  Azure Blob Storage; the account is AZURE_STORAGE_ACCOUNT
//	                  (or storage_account=name), credentials are
//	                  AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN,
//	                  AZURE_STORAGE_CONNECTION_STRING or Azure's default
//	                  credential chain; for Azurite add
//	                  protocol=http&localemu=true&domain=127.0.0.1:10000
//
// Every URL takes prefix=dir/ to keep the store's keys under one folder
// of the bucket.
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
	bl := &Blobs{bucket: b, timeout: DefaultBlobTimeout}
	if u.Scheme == "file" {
		bl.dir = filepath.FromSlash(u.Path)
	}
	return bl, nil
}

// SetTimeout bounds every later operation to d (DefaultBlobTimeout when d
// is not positive); call it before use.
func (b *Blobs) SetTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultBlobTimeout
	}
	b.timeout = d
}

// SetListPageSize makes List ask for n keys at a time (defaultListPage,
// 1000, when n is not positive); call it before use. A small page makes a
// test exercise the store's pagination without thousands of blobs.
func (b *Blobs) SetListPageSize(n int) {
	if n <= 0 {
		n = defaultListPage
	}
	b.pageSize = n
}

// ImageKey is the blob key of an image's bytes. Each upload gets its own
// token (NewBlobToken), so its key is used by no other upload:
// images/<user>/<id>.<token>. Images stored before tokens have the empty
// token and the key images/<user>/<id>.
func ImageKey(user, id, token string) string { return "images/" + user + "/" + tokenized(id, token) }

// VariantPrefix is the key prefix of every cached variant of one stored
// image (one upload: the token is its image's).
func VariantPrefix(user, id, token string) string {
	return "variants/" + user + "/" + tokenized(id, token) + "/"
}

// VariantKey is the blob key of one cached variant of a stored image; hash
// identifies the transformation chain and output type.
func VariantKey(user, id, token, hash string) string { return VariantPrefix(user, id, token) + hash }

func tokenized(id, token string) string {
	if token == "" {
		return id
	}
	return id + "." + token
}

// NewBlobToken returns a fresh random token for an image's blob keys.
func NewBlobToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// op starts a bounded operation: its context, and the function that turns
// the operation's error into the error to return (an *UnavailableError
// when the store's silence, not the caller, ended it, or when the store
// failed).
//
// The bound is on silence, not on length: the operation's context ends
// once the store has made no progress for b.timeout. Progress is each
// chunk the store takes from a reader it pulls (Put) or gives to one that
// pulls from it (Get, Open), or each Write it accepts (writePart); time
// the caller spends between reads or writes is not the store's, so it is
// not counted (see watched). A 200 MB read-back is not cut at 5s, while a
// store that stops answering still is.
func (b *Blobs) op(ctx context.Context, op, key string) (*blobOp, error) {
	if b.intercept != nil {
		if err := b.intercept(ctx, op, key); err != nil {
			return nil, fmt.Errorf("storage: %s blob %s: %w", op, key, err)
		}
	}
	sctx, span := startSpan(ctx, "blob "+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("vitrine.blob.operation", op), attribute.String("vitrine.blob.key", key)))
	octx, cancel := context.WithCancelCause(sctx)
	o := &blobOp{ctx: octx, cancel: cancel, timeout: b.timeout, timer: time.AfterFunc(b.timeout, func() { cancel(errSilent) })}
	o.wrap = func(err error) error {
		err = b.classify(ctx, octx, op, key, err)
		if err != nil && !errors.Is(err, ErrNotExist) {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		return err
	}
	o.end = func() { o.timer.Stop(); cancel(nil); span.End() }
	return o, nil
}

// errSilent ends an operation whose store was silent for its timeout.
var errSilent = errors.New("storage: the blob store made no progress")

// blobOp is one bounded blob operation (op): ctx ends when the store has
// been silent for timeout, or with end.
type blobOp struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timeout time.Duration
	timer   *time.Timer
	wrap    func(error) error
	end     func()
}

// progress restarts the silence bound: the store just moved.
func (o *blobOp) progress() { o.timer.Reset(o.timeout) }

// waiting starts the bound while the caller waits on the store, and
// returns what stops it once the store has answered.
func (o *blobOp) waiting() (answered func()) {
	o.timer.Reset(o.timeout)
	return func() { o.timer.Stop() }
}

// pulled is a reader the store pulls from: each read is progress.
type pulled struct {
	r io.Reader
	o *blobOp
}

func (p pulled) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.o.progress()
	}
	return n, err
}

// watched is a reader of the store's: the bound runs only while a Read
// waits on it, so a slow consumer is not taken for a silent store.
type watched struct {
	r io.Reader
	o *blobOp
}

func (w watched) Read(b []byte) (int, error) {
	answered := w.o.waiting()
	defer answered()
	return w.r.Read(b)
}

// classify is op's error as the caller gets it (see op).
func (b *Blobs) classify(ctx, octx context.Context, op, key string, err error) error {
	switch {
	case err == nil:
		return nil
	case gcerrors.Code(err) == gcerrors.NotFound:
		return fmt.Errorf("storage: %s blob %s: %w", op, key, ErrNotExist)
	case ctx.Err() != nil:
		return fmt.Errorf("storage: %s blob %s: %w", op, key, ctx.Err())
	case context.Cause(octx) == errSilent:
		return &UnavailableError{Backend: "blob store", Op: op + " " + key, Timeout: b.timeout, Err: err}
	case errors.Is(err, ErrInvalid):
		return err
	}
	return &UnavailableError{Backend: "blob store", Op: op + " " + key, Err: err}
}

// Put writes data at key, all or nothing: when the write fails or ctx is
// cancelled, the previous blob (or its absence) stays. The content type is
// detected from data where the backend stores one.
func (b *Blobs) Put(ctx context.Context, key string, data []byte) (err error) {
	defer b.timed("put", time.Now(), &err)
	o, err := b.op(ctx, "put", key)
	if err != nil {
		return err
	}
	defer o.end()
	// Why Upload rather than NewWriter, Write and Close: the data is whole
	// already, and gocloud.dev v0.47's Azure writer dereferences a nil pipe
	// in Close after a failed or cancelled upload when written through
	// Write; Upload hands the driver the reader in one call. The content
	// type is what NewWriter would have sniffed.
	opts := &blob.WriterOptions{ContentType: http.DetectContentType(data)}
	return o.wrap(b.bucket.Upload(o.ctx, key, pulled{bytes.NewReader(data), o}, opts))
}

// PutFrom writes what r yields at key, streaming, all or nothing as Put.
// The content type is detected from the first bytes.
func (b *Blobs) PutFrom(ctx context.Context, key string, r io.Reader) (err error) {
	defer b.timed("put", time.Now(), &err)
	o, err := b.op(ctx, "put", key)
	if err != nil {
		return err
	}
	defer o.end()
	br := bufio.NewReaderSize(r, 512)
	head, _ := br.Peek(512)
	opts := &blob.WriterOptions{ContentType: http.DetectContentType(head)}
	return o.wrap(b.bucket.Upload(o.ctx, key, pulled{br, o}, opts))
}

// Get reads the blob at key; ErrNotExist when there is none.
func (b *Blobs) Get(ctx context.Context, key string) ([]byte, error) {
	return b.GetInto(ctx, key, nil)
}

// GetInto is Get reading into buf's memory when the blob fits its
// capacity (a new buffer otherwise), so a caller can reuse buffers.
func (b *Blobs) GetInto(ctx context.Context, key string, buf []byte) (_ []byte, err error) {
	defer b.timed("get", time.Now(), &err)
	o, err := b.op(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	defer o.end()
	r, err := b.bucket.NewReader(o.ctx, key, nil)
	if err != nil {
		return nil, o.wrap(err)
	}
	defer r.Close()
	data, err := readSized(watched{r, o}, r.Size(), buf)
	if err != nil {
		return nil, o.wrap(err)
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
// closes it. ErrNotExist when there is none. The timeout bounds each
// read's wait on the store (op), up to Close; a read it cut returns an
// *UnavailableError.
func (b *Blobs) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	o, err := b.op(ctx, "open", key)
	if err != nil {
		return nil, err
	}
	r, err := b.bucket.NewReader(o.ctx, key, nil)
	if err != nil {
		defer o.end()
		return nil, o.wrap(err)
	}
	o.timer.Stop()
	return &openReader{r: r, o: o}, nil
}

// openReader is Open's reader: reads watched by its operation, which
// Close ends.
type openReader struct {
	r *blob.Reader
	o *blobOp
}

func (c *openReader) Read(b []byte) (int, error) {
	n, err := watched{c.r, c.o}.Read(b)
	if err != nil && !errors.Is(err, io.EOF) {
		err = c.o.wrap(err)
	}
	return n, err
}

func (c *openReader) Close() error {
	defer c.o.end()
	return c.r.Close()
}

// Attributes returns the size and modification time of the blob at key;
// ErrNotExist when there is none.
func (b *Blobs) Attributes(ctx context.Context, key string) (size int64, modTime time.Time, err error) {
	o, err := b.op(ctx, "attributes", key)
	if err != nil {
		return 0, time.Time{}, err
	}
	defer o.end()
	a, err := b.bucket.Attributes(o.ctx, key)
	if err != nil {
		return 0, time.Time{}, o.wrap(err)
	}
	return a.Size, a.ModTime.UTC(), nil
}

// Exists reports whether there is a blob at key.
func (b *Blobs) Exists(ctx context.Context, key string) (bool, error) {
	_, _, err := b.Attributes(ctx, key)
	if errors.Is(err, ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Delete removes the blob at key; a missing blob is not an error.
func (b *Blobs) Delete(ctx context.Context, key string) (err error) {
	defer b.timed("delete", time.Now(), &err)
	o, err := b.op(ctx, "delete", key)
	if err != nil {
		return err
	}
	defer o.end()
	if err := o.wrap(b.bucket.Delete(o.ctx, key)); err != nil && !errors.Is(err, ErrNotExist) {
		return err
	}
	return nil
}

// DeletePrefix removes every blob whose key starts with prefix.
func (b *Blobs) DeletePrefix(ctx context.Context, prefix string) error {
	if prefix == "" {
		return fmt.Errorf("storage: delete blobs: empty prefix: %w", ErrInvalid)
	}
	return b.List(ctx, prefix, func(o BlobInfo) error { return b.Delete(ctx, o.Key) })
}

// BlobInfo describes one listed blob.
type BlobInfo struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// List calls fn for every blob whose key starts with prefix, in key order,
// a page at a time (each page bounded by the timeout); an error from fn
// stops the listing and is returned.
func (b *Blobs) List(ctx context.Context, prefix string, fn func(BlobInfo) error) error {
	if b.dir != "" {
		return b.listDir(ctx, prefix, fn)
	}
	token, size := blob.FirstPageToken, b.pageSize
	if size <= 0 {
		size = defaultListPage
	}
	for {
		o, err := b.op(ctx, "list", prefix)
		if err != nil {
			return err
		}
		page, next, err := b.bucket.ListPage(o.ctx, token, size, &blob.ListOptions{Prefix: prefix})
		err = o.wrap(err)
		o.end()
		if err != nil {
			return err
		}
		for _, o := range page {
			if o.IsDir {
				continue
			}
			if err := fn(BlobInfo{Key: o.Key, Size: o.Size, ModTime: o.ModTime.UTC()}); err != nil {
				return err
			}
		}
		if len(next) == 0 {
			return nil
		}
		token = next
	}
}

// Ping checks that the bucket can be reached within the timeout.
func (b *Blobs) Ping(ctx context.Context) error {
	o, err := b.op(ctx, "ping", "")
	if err != nil {
		return err
	}
	defer o.end()
	ok, err := b.bucket.IsAccessible(o.ctx)
	if err != nil {
		return o.wrap(err)
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
