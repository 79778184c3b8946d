package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"github.com/vitrine/vitrine/storage"
)

// This file is tusd's data store for resumable uploads (tus.go): it names
// and creates uploads, and reads, writes and deletes their parts through
// storage.Resumable.

// preCreate names the new upload (its id carries its user, so that its URL
// is /users/<user>/uploads/<id>) and its expiry.
func (t *tus) preCreate(ev tusd.HookEvent) (tusd.HTTPResponse, tusd.FileInfoChanges, error) {
	c := tusCall(ev.Context)
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return tusd.HTTPResponse{}, tusd.FileInfoChanges{}, err
	}
	expires := t.s.now().Add(t.s.cfg.Uploads.ResumableTTL).UTC()
	return tusd.HTTPResponse{Header: tusd.HTTPHeader{"Upload-Expires": httpDate(expires)}},
		tusd.FileInfoChanges{
			ID:      "users/" + c.params["user"] + "/uploads/" + hex.EncodeToString(b[:]),
			Storage: map[string]string{"expires": expires.Format(time.RFC3339Nano)},
		}, nil
}

// storeID is the store's id of the upload tusd names by its path.
func storeID(id string) string { return id[strings.LastIndexByte(id, '/')+1:] }

// NewUpload creates the upload preCreate named.
func (t *tus) NewUpload(ctx context.Context, fi tusd.FileInfo) (tusd.Upload, error) {
	c := tusCall(ctx)
	expires, err := time.Parse(time.RFC3339Nano, fi.Storage["expires"])
	if err != nil {
		return nil, fmt.Errorf("api: tus: new upload without expiry: %w", err)
	}
	info := storage.UploadInfo{ID: storeID(fi.ID), User: c.params["user"], PublicKey: c.publicKey,
		Size: fi.Size, MetaData: fi.MetaData, Created: t.s.now().UTC(), Expires: expires}
	if c.token != nil {
		info.Token = c.token.Hash
	}
	if err := t.parts.Create(ctx, info); err != nil {
		return nil, storeFailed(ctx, err)
	}
	return &tusUpload{t: t, id: fi.ID, info: info}, nil
}

// GetUpload reads an upload for tusd.
func (t *tus) GetUpload(ctx context.Context, id string) (tusd.Upload, error) {
	info, err := t.load(ctx, storeID(id))
	if err != nil {
		tusCall(ctx).tusErr = err
		return nil, tusd.ErrNotFound
	}
	return &tusUpload{t: t, id: id, info: info}, nil
}

// AsTerminatableUpload lets tusd delete an upload.
func (t *tus) AsTerminatableUpload(u tusd.Upload) tusd.TerminatableUpload {
	return u.(*tusUpload)
}

// tusUpload is one upload for tusd.
type tusUpload struct {
	t    *tus
	id   string
	info storage.UploadInfo
}

func (u *tusUpload) WriteChunk(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	n, err := u.t.parts.Write(ctx, u.info.ID, offset, src)
	u.info.Offset = offset + n
	if errors.Is(err, storage.ErrUploadConflict) {
		tusCall(ctx).tusErr = coded(http.StatusConflict, codeTusConflict,
			"Another request wrote this part of the upload first: HEAD tells the offset to resume from")
		return n, tusd.NewError("ERR_UPLOAD_CONFLICT", err.Error(), http.StatusConflict)
	}
	return n, storeFailed(ctx, err)
}

// storeFailed is err as tusd gets it: a store that did not answer is
// recorded for the request's answer (503 with Retry-After, as any request
// the store fails gets, not tusd's 500); what was committed before it
// stays, so the client's retry resumes from there. Other errors (a client
// whose body broke off) go to tusd as they are.
func storeFailed(ctx context.Context, err error) error {
	if !errors.Is(err, storage.ErrUnavailable) {
		return err
	}
	if c := tusCall(ctx); c != nil && c.tusErr == nil {
		c.tusErr = err
	}
	e := httpError(err)
	return tusd.NewError("ERR_STORE_UNAVAILABLE", e.Msg, e.Status)
}

func (u *tusUpload) GetInfo(context.Context) (tusd.FileInfo, error) {
	return tusd.FileInfo{ID: u.id, Size: u.info.Size, Offset: u.info.Offset, MetaData: u.info.MetaData,
		Storage: map[string]string{"expires": u.info.Expires.Format(time.RFC3339Nano)}}, nil
}

func (u *tusUpload) GetReader(ctx context.Context) (io.ReadCloser, error) {
	r, err := u.t.parts.Reader(ctx, u.info.ID)
	return r, storeFailed(ctx, err)
}

// FinishUpload does nothing: the image is ingested by finish, which can
// answer.
func (u *tusUpload) FinishUpload(context.Context) error { return nil }

func (u *tusUpload) Terminate(ctx context.Context) error {
	return storeFailed(ctx, u.t.parts.Delete(context.WithoutCancel(ctx), u.info.ID))
}

var (
	_ tusd.DataStore           = (*tus)(nil)
	_ tusd.TerminaterDataStore = (*tus)(nil)
	_ tusd.Upload              = (*tusUpload)(nil)
)
