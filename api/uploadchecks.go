package api

import (
	"context"
	"net/http"

	"github.com/vitrine/vitrine/storage"
)

// This file is the list of an upload's steps before its blob is written
// (uploadSteps), which storeUpload runs in order for every upload of
// images.post, a POST or the last byte of a resumable upload
// (tuscomplete.go). Six steps are the upload's checks; each one's doc
// comment names its twin in storage, the check made again in the
// transaction that commits the image (CommitImage), or says why it has
// none. The two other steps give the checks after them what they look at:
// the upload's bytes and record, and the image the user has already.

// pendingUpload is an upload on its way through uploadSteps.
type pendingUpload struct {
	call *call
	// data is the final body and img the record to commit (readUpload);
	// analyzeUpload adds img's properties and `exif` metadata.
	data []byte
	img  storage.Image
	// stored is the image the user has already with these bytes, nil for
	// a new one (findStored): the checks that guard a new image let such
	// an upload through, and storeImage returns the image as it is.
	stored *storage.Image
}

// uploadStep is one step of uploadSteps: an error refuses the upload;
// otherwise the step has set what the steps after it need.
type uploadStep struct {
	name string
	run  func(s *Server, ctx context.Context, u *pendingUpload) error
}

// uploadSteps are an upload's steps before its blob is written, in the
// order they run. The order is the API's: the cheap refusals come before
// the upload is analysed, and a refusal of the blocklist wins over the
// answer for an image the user has already.
var uploadSteps = []uploadStep{
	{"erasing", (*Server).refuseErasingUser},
	{"read", (*Server).readUpload},
	{"checksum blocklist", (*Server).refuseBlockedChecksums},
	{"stored", (*Server).findStored},
	{"quota", (*Server).refuseOverQuota},
	{"analysis", (*Server).analyzeUpload},
	{"perceptual blocklist", (*Server).refuseBlockedHash},
	{"near-duplicate", (*Server).refuseNearDuplicate},
}

// refuseErasingUser answers 409 while the upload's user is being erased
// (refuseErasing), before the upload is read. Twin: storage's
// refuseErasing (storage/erasures.go), in the commit's transaction once
// it holds the user's row of image_counts, refuses with
// storage.ErrErasing (409) an image whose user's erasure began meanwhile.
func (s *Server) refuseErasingUser(ctx context.Context, u *pendingUpload) error {
	return s.refuseErasing(ctx, u.call.params["user"])
}

// readUpload is not a check: it reads the final body (listeners of
// images.post may have read, replaced or tagged the upload already,
// eventdata.go), checks its type and header, and makes the record to
// commit, named by the MD5 of the bytes, with the listeners' metadata
// and the upload token the call is made with.
func (s *Server) readUpload(ctx context.Context, u *pendingUpload) error {
	c := u.call
	data, err := c.uploadBody()
	if err != nil {
		return err
	}
	info, err := c.uploadInfo(ctx)
	if err != nil {
		return err
	}
	id := c.upload.md5()
	orig := id
	if c.upload.origSum != "" {
		orig = c.upload.origSum
	}
	u.data = data
	u.img = storage.Image{
		User: c.params["user"], Identifier: id, Size: int64(len(data)), Extension: info.Ext, Mime: info.Mime,
		Width: info.Width, Height: info.Height, Frames: info.Frames, Checksum: id, OriginalChecksum: orig,
		Added: s.now().UTC(), Updated: s.now().UTC(), Metadata: c.upload.metadata, Source: c.upload.source,
		Video: videoOf(info),
	}
	if c.token != nil {
		u.img.UploadToken = c.token.ID
	}
	return nil
}

// refuseBlockedChecksums answers 451 when a blocklist entry blocks the
// MD5 of the bytes the client sent or of the bytes to be stored
// (checkBlockedChecksums), whether or not the user has the image
// already. No twin: storage keeps the entries and does not check commits
// against them (storage/blocklist.go), so an upload that passed before an
// entry was added is stored, as the images stored before it are (POST
// /blocklist with `remove` deletes those).
func (s *Server) refuseBlockedChecksums(ctx context.Context, u *pendingUpload) error {
	return s.checkBlockedChecksums(ctx, u.img.Checksum, u.img.OriginalChecksum)
}

// findStored is not a check: it finds the image the user has already
// with these bytes, if any (pendingUpload.stored).
func (s *Server) findStored(ctx context.Context, u *pendingUpload) error {
	existing, err := s.images.Image(ctx, u.img.User, u.img.Identifier)
	if err == nil {
		u.stored = &existing
		return nil
	}
	if isNotExist(err) {
		return nil
	}
	return err
}

// refuseOverQuota refuses (403, a *storage.QuotaError) a new image that
// its user's quotas leave no room for, before its blob is written; an
// image the user has already adds nothing. Twin: storage's enforceQuota
// (storage/quotas.go), in the commit's transaction once it holds the
// user's row of image_counts, refuses what uploads committed meanwhile
// left no room for.
func (s *Server) refuseOverQuota(ctx context.Context, u *pendingUpload) error {
	if u.stored != nil {
		return nil
	}
	return s.quotas.CheckQuota(ctx, u.img.User, u.img.Size)
}

// analyzeUpload sets the properties and the `exif` metadata of a new
// image; it refuses nothing. Analysis is a courtesy: when it fails the
// image is stored without properties (vitrine analyze retries), and tags
// that would push the metadata over its limits are dropped (withEXIF). No
// twin: there is nothing to check again; what it sets is written in the
// commit's transaction with the image.
func (s *Server) analyzeUpload(ctx context.Context, u *pendingUpload) error {
	if u.stored != nil {
		return nil
	}
	img := &u.img
	props, tags, err := s.Analyze(ctx, u.picture())
	if err != nil {
		s.log.Warn("analysis failed; the image is stored without properties", "user", img.User, "image", img.Identifier, "err", err)
	}
	img.Properties = props
	md, err := withEXIF(img.Metadata, tags, s.cfg.Limits)
	if err != nil {
		s.log.Warn("EXIF tags left out", "user", img.User, "image", img.Identifier, "err", err)
	} else if md != nil {
		img.Metadata = md
	}
	return nil
}

// refuseBlockedHash answers 451 when the picture's perceptual hash is
// within a hash entry's distance (checkBlockedHash), whether or not the
// user has the image already: the hash is the analysis's, or, when it
// gave none (analysis.perceptualHash off, or an image the user has
// already, which is not analysed), computed for the check alone. No twin,
// as for the checksums.
func (s *Server) refuseBlockedHash(ctx context.Context, u *pendingUpload) error {
	return s.checkBlockedHash(ctx, u.img.Properties, u.picture())
}

// refuseNearDuplicate answers 409 when analysis.rejectNearDuplicates is
// set and the user has an image near the new image's perceptual hash. No
// twin: two near duplicates uploaded at the same moment may both be
// stored.
func (s *Server) refuseNearDuplicate(ctx context.Context, u *pendingUpload) error {
	d, img := s.cfg.Analysis.RejectNearDuplicates, &u.img
	if u.stored != nil || d == nil || img.Properties == nil || !img.Properties.HasPHash {
		return nil
	}
	page, err := s.listing.Images(ctx, storage.Query{Users: []string{img.User}, Limit: 1,
		Similar: &storage.Similarity{Hash: img.Properties.PHash, MaxDistance: *d}})
	if err != nil {
		return err
	}
	if len(page.Images) > 0 {
		near := page.Images[0]
		return errorf(http.StatusConflict, "Image is a near duplicate of %s (%d bits apart)", near.Identifier, near.Distance)
	}
	return nil
}
