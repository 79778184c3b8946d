package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// This file keeps the parts of resumable uploads (api/README.md, Resumable
// uploads) in a bucket: the blob store itself or a staging folder of its
// own (uploads.stagingDir). An upload is
//
//	uploads/<id>/info                 its UploadInfo as JSON
//	uploads/<id>/part/<offset>        its bytes from offset (20 digits), one
//	                                  object per part
//
// Why parts rather than one object appended to: no blob store appends,
// and a part is committed whole or not at all, so a server killed in the
// middle of a PATCH loses at most the part it was writing. The offset of an
// upload is the length of the run of parts that follow each other from 0,
// so every instance that shares the bucket sees the same offset, and a part
// is created only if no object has its key yet: of two requests that
// write from the same offset, from one instance or two, one loses
// (ErrUploadConflict).

// DefaultPartSize is the size of an upload's parts (uploads.partSize).
const DefaultPartSize = 8 << 20

// ErrUploadConflict is the error of a write whose part another request
// created first.
var ErrUploadConflict = errors.New("storage: another request wrote this part of the upload first")

// UploadInfo describes a resumable upload.
type UploadInfo struct {
	ID string `json:"id"`
	// User is the user the upload is for, PublicKey the key it is made
	// with (an upload token's issuing key) and Token the hash of the upload
	// token it was created with, if any.
	User      string `json:"user"`
	PublicKey string `json:"publicKey"`
	Token     string `json:"token,omitempty"`
	// Size is the declared length, in bytes.
	Size int64 `json:"size"`
	// MetaData is the client's Upload-Metadata.
	MetaData map[string]string `json:"metadata,omitempty"`
	Created  time.Time         `json:"created"`
	Expires  time.Time         `json:"expires"`
	// Offset is how many bytes the parts hold (not stored: counted; Size
	// once finished).
	Offset int64 `json:"-"`
	// Image, once the upload was stored as an image (Finish), is its
	// identifier: the parts are gone, and the info stays until Expires
	// so that a client that lost the answer learns it.
	Image string `json:"image,omitempty"`
}

// Resumable stores resumable uploads in a bucket.
type Resumable struct {
	blobs    *Blobs
	partSize int64
}

// NewResumable keeps resumable uploads in b, in parts of partSize bytes
// (DefaultPartSize when not positive).
func NewResumable(b *Blobs, partSize int64) *Resumable {
	if partSize <= 0 {
		partSize = DefaultPartSize
	}
	return &Resumable{blobs: b, partSize: partSize}
}

// PartSize is the size of the parts a write commits.
func (r *Resumable) PartSize() int64 { return r.partSize }

const uploadsPrefix = "uploads/"

func infoKey(id string) string { return uploadsPrefix + id + "/info" }

func partPrefix(id string) string { return uploadsPrefix + id + "/part/" }

func partKey(id string, offset int64) string { return fmt.Sprintf("%s%020d", partPrefix(id), offset) }

// Create stores a new upload's info; an upload with its id is a conflict.
func (r *Resumable) Create(ctx context.Context, info UploadInfo) error {
	return r.putInfo(ctx, info, true)
}

func (r *Resumable) putInfo(ctx context.Context, info UploadInfo, create bool) error {
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	key := infoKey(info.ID)
	o, err := r.blobs.op(ctx, "put", key)
	if err != nil {
		return err
	}
	defer o.end()
	err = r.blobs.bucket.WriteAll(o.ctx, key, data, &blob.WriterOptions{ContentType: "application/json", IfNotExist: create})
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return ErrUploadConflict
	}
	return o.wrap(err)
}

// Info returns the upload id with its offset; ErrNotExist when there is
// none.
func (r *Resumable) Info(ctx context.Context, id string) (UploadInfo, error) {
	data, err := r.blobs.Get(ctx, infoKey(id))
	if err != nil {
		return UploadInfo{}, err
	}
	var info UploadInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return UploadInfo{}, fmt.Errorf("storage: upload %s: bad info: %w", id, err)
	}
	if info.Image != "" {
		info.Offset = info.Size
		return info, nil
	}
	parts, err := r.parts(ctx, id)
	if err != nil {
		return UploadInfo{}, err
	}
	for _, p := range parts {
		info.Offset += p.Size
	}
	return info, nil
}

// Finish records that upload info was stored as the image id: its parts
// are deleted and its info, naming the image, is kept until until.
func (r *Resumable) Finish(ctx context.Context, info UploadInfo, image string, until time.Time) error {
	if err := r.blobs.DeletePrefix(ctx, partPrefix(info.ID)); err != nil {
		return err
	}
	info.Image, info.Expires = image, until
	return r.putInfo(ctx, info, false)
}

// parts lists the run of parts of upload id that follow each other from
// offset 0; anything after a gap is not part of the upload.
func (r *Resumable) parts(ctx context.Context, id string) ([]BlobInfo, error) {
	var run []BlobInfo
	var next int64
	gap := false
	err := r.blobs.List(ctx, partPrefix(id), func(b BlobInfo) error {
		off, err := strconv.ParseInt(strings.TrimPrefix(b.Key, partPrefix(id)), 10, 64)
		if err != nil || gap {
			return nil // a temporary file of a part being written
		}
		if off != next {
			gap = true
			return nil
		}
		run = append(run, b)
		next += b.Size
		return nil
	})
	return run, err
}

// Write appends what src holds to upload id from offset, committing a part
// every PartSize bytes and the last, shorter part when src ends or fails.
// It returns the bytes committed: a failure loses at most the part being
// written. A part another request created first is ErrUploadConflict.
func (r *Resumable) Write(ctx context.Context, id string, offset int64, src io.Reader) (int64, error) {
	var written int64
	for {
		n, err := r.writePart(ctx, partKey(id, offset+written), src)
		written += n
		if err != nil || n < r.partSize {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return written, err
		}
	}
}

// writePart copies up to PartSize bytes of src into a new part at key and
// commits it unless it is empty. err is io.EOF when src ended.
//
// The store's silence is bounded (storageTimeout) while a write or the
// commit waits on it, not while src does: a client that pauses is the
// request's read timeout's business.
func (r *Resumable) writePart(ctx context.Context, key string, src io.Reader) (int64, error) {
	// The part is committed even if the request's context ends: what was
	// read is the client's, and the next request resumes after it.
	o, err := r.blobs.op(context.WithoutCancel(ctx), "write", key)
	if err != nil {
		return 0, err
	}
	defer o.end()
	o.timer.Stop()
	w, err := r.blobs.bucket.NewWriter(o.ctx, key, &blob.WriterOptions{
		ContentType: "application/octet-stream", IfNotExist: true})
	if err != nil {
		return 0, fmt.Errorf("storage: write %s: %w", key, o.wrap(err))
	}
	n, copyErr := io.CopyN(storeWriter{w, o}, src, r.partSize)
	if n == 0 {
		o.cancel(io.EOF) // discards the empty part
		_ = w.Close()
		if copyErr == nil {
			copyErr = io.EOF
		}
		return 0, copyErr
	}
	answered := o.waiting()
	err = w.Close()
	answered()
	if err != nil {
		if gcerrors.Code(err) == gcerrors.FailedPrecondition {
			return 0, ErrUploadConflict
		}
		return 0, o.wrap(err)
	}
	return n, copyErr
}

// storeWriter is a writer of the store's whose Writes are bounded by its
// operation while they wait on the store.
type storeWriter struct {
	w io.Writer
	o *blobOp
}

func (s storeWriter) Write(b []byte) (int, error) {
	answered := s.o.waiting()
	defer answered()
	return s.w.Write(b)
}

// Reader reads the bytes of upload id, part after part.
func (r *Resumable) Reader(ctx context.Context, id string) (io.ReadCloser, error) {
	parts, err := r.parts(ctx, id)
	if err != nil {
		return nil, err
	}
	return &partsReader{ctx: ctx, blobs: r.blobs, parts: parts}, nil
}

type partsReader struct {
	ctx   context.Context
	blobs *Blobs
	parts []BlobInfo
	cur   io.ReadCloser
}

func (p *partsReader) Read(b []byte) (int, error) {
	for {
		if p.cur == nil {
			if len(p.parts) == 0 {
				return 0, io.EOF
			}
			rc, err := p.blobs.Open(p.ctx, p.parts[0].Key)
			if err != nil {
				return 0, err
			}
			p.cur, p.parts = rc, p.parts[1:]
		}
		n, err := p.cur.Read(b)
		if errors.Is(err, io.EOF) {
			_ = p.cur.Close()
			p.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (p *partsReader) Close() error {
	if p.cur != nil {
		return p.cur.Close()
	}
	return nil
}

// Delete deletes upload id: its parts, then its info.
func (r *Resumable) Delete(ctx context.Context, id string) error {
	if err := r.blobs.DeletePrefix(ctx, partPrefix(id)); err != nil {
		return err
	}
	return r.blobs.DeletePrefix(ctx, uploadsPrefix+id+"/")
}

// SweepReport counts what Sweep found.
type SweepReport struct {
	// Uploads counts the uploads seen, Expired those past their expiry.
	Uploads int64 `json:"uploads"`
	Expired Findings
	// Orphans are objects under uploads/ that belong to no upload (parts
	// of an upload whose info is gone, temporary files of a part a killed
	// server was writing), older than the grace period.
	Orphans Findings
}

// Sweep finds the expired uploads and orphaned objects as of now (objects
// younger than grace are left alone: their upload may be being created)
// and, with repair, deletes them.
func (r *Resumable) Sweep(ctx context.Context, now time.Time, grace time.Duration, repair bool) (SweepReport, error) {
	var rep SweepReport
	var orphans []string
	var expired []string
	cur, curHasInfo := "", false
	err := r.blobs.List(ctx, uploadsPrefix, func(b BlobInfo) error {
		id, rest, _ := strings.Cut(strings.TrimPrefix(b.Key, uploadsPrefix), "/")
		if id != cur {
			cur, curHasInfo = id, false
		}
		if rest == "info" {
			curHasInfo = true
			rep.Uploads++
			info, err := r.Info(ctx, id)
			if errors.Is(err, ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			if !now.Before(info.Expires) {
				rep.Expired.add(10, id)
				expired = append(expired, id)
			}
			return nil
		}
		// Keys sort "info" before "part/...": a part listed without its
		// upload's info seen first has none.
		if !curHasInfo && now.Sub(b.ModTime) > grace {
			rep.Orphans.add(10, b.Key)
			orphans = append(orphans, b.Key)
		}
		return nil
	})
	if err != nil || !repair {
		return rep, err
	}
	for _, id := range expired {
		if err := r.Delete(ctx, id); err != nil {
			return rep, err
		}
		rep.Expired.Repaired++
	}
	for _, key := range orphans {
		if err := r.blobs.Delete(ctx, key); err != nil {
			return rep, err
		}
		rep.Orphans.Repaired++
	}
	return rep, nil
}
