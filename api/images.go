package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/vitrine/vitrine/storage"
)

// imageFields is the fixed key order of listing entries.
var imageFields = append([]string{"added", "updated", "checksum", "originalChecksum", "extension", "size",
	"width", "height", "mime", "mimeType", "imageIdentifier", "user", "metadata", "video"}, propertyFields...)

// object is a JSON object that keeps its key order.
type object struct {
	keys []string
	vals map[string]any
}

// MarshalJSON writes the keys in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// imageEntry renders one listing entry with the requested fields.
func imageEntry(img storage.Image, fields []string, withMetadata, similar bool) object {
	var orig any
	if img.OriginalChecksum != "" {
		orig = img.OriginalChecksum
	}
	vals := map[string]any{
		"added": httpDate(img.Added), "updated": httpDate(img.Updated), "checksum": img.Checksum,
		"originalChecksum": orig, "extension": img.Extension, "size": img.Size, "width": img.Width,
		"height": img.Height, "mime": img.Mime, "mimeType": img.Mime, "imageIdentifier": img.Identifier,
		"user": img.User,
	}
	propertyValues(img, similar, vals)
	if v := img.Video; v != nil {
		vals["video"] = VideoEntry{Duration: v.Duration, FPS: v.FPS, Codec: v.Codec}
	}
	if withMetadata {
		md := img.Metadata
		if md == nil {
			md = map[string]any{}
		}
		vals["metadata"] = md
	}
	o := object{vals: vals}
	for _, k := range imageFields {
		if _, ok := vals[k]; !ok {
			continue
		}
		if len(fields) > 0 && !slices.Contains(fields, k) {
			continue
		}
		o.keys = append(o.keys, k)
	}
	return o
}

// writeListing runs the query and writes {search, images}.
func (s *Server) writeListing(c *call, q storage.Query, fields []string) error {
	// An empty, non-nil user list means "none may be read"; storage would
	// read an empty list as "every user".
	page, last := storage.Page{}, s.now()
	q.WithProperties = wantsProperties(fields)
	if q.Users == nil || len(q.Users) > 0 {
		var err error
		if page, err = s.listing.Images(c.ctx(), q); err != nil {
			return err
		}
		if last, err = s.lastModified(c.ctx(), q.Users); err != nil {
			return err
		}
	}
	entries := make([]object, len(page.Images))
	for i, img := range page.Images {
		entries[i] = imageEntry(img, fields, q.WithMetadata, q.Similar != nil)
	}
	return c.writeJSON(map[string]any{
		"search": map[string]int{"hits": page.Hits, "page": q.Page, "limit": q.Limit, "count": len(entries)},
		"images": entries,
	}, out{cache: cacheJSON, etag: true, lastModified: last})
}

func (s *Server) listImages(c *call) error {
	q, fields, err := listQuery(c)
	if err != nil {
		return err
	}
	q.Users = []string{c.params["user"]}
	if _, err := s.countImages(c.ctx(), q.Users[0]); err != nil {
		return err
	}
	if err := s.similarQuery(c.ctx(), c, &q); err != nil {
		return err
	}
	return s.writeListing(c, q, fields)
}

// listGlobalImages serves GET /images: the users[] the key may read, or
// every user with images the key may read (all of them for a `*` rule).
func (s *Server) listGlobalImages(c *call) error {
	q, fields, err := listQuery(c)
	if err != nil {
		return err
	}
	_, rules, _, err := s.acl.key(c.ctx(), c.publicKey)
	if err != nil {
		return err
	}
	users := listParam(c.query, "users")
	if len(users) > 0 {
		denied, err := s.acl.deniedUsers(c.ctx(), rules, users)
		if err != nil {
			return err
		}
		if len(denied) > 0 {
			return errorf(http.StatusBadRequest, "Public key does not have access to the users: [%s]", strings.Join(denied, ", "))
		}
	} else {
		all, err := s.listing.Users(c.ctx())
		if err != nil {
			return err
		}
		denied, err := s.acl.deniedUsers(c.ctx(), rules, all)
		if err != nil {
			return err
		}
		users = []string{}
		for _, u := range all {
			if !slices.Contains(denied, u) {
				users = append(users, u)
			}
		}
	}
	q.Users = users
	if err := s.similarQuery(c.ctx(), c, &q); err != nil {
		return err
	}
	return s.writeListing(c, q, fields)
}

// postImage stores an upload (storeUpload) and names the image.
func (s *Server) postImage(c *call) error {
	img, created, err := s.storeUpload(c)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.params["image"] = img.Identifier
	c.w.Header().Set(c.header("ImageIdentifier"), img.Identifier)
	return c.writeJSON(map[string]any{"imageIdentifier": img.Identifier, "width": img.Width,
		"height": img.Height, "extension": img.Extension}, out{status: status})
}

// storeUpload stores the upload of an images.post call, whether a POST or the
// last byte of a resumable upload (tuscomplete.go): it runs uploadSteps in
// order (uploadchecks.go: the upload's checks, each beside its twin in
// the image's transaction), then storeImage stores it. created is false
// for an image the user already had.
func (s *Server) storeUpload(c *call) (storage.Image, bool, error) {
	ctx := c.ctx()
	u := &pendingUpload{call: c}
	for _, step := range uploadSteps {
		if err := step.run(s, ctx, u); err != nil {
			return storage.Image{}, false, err
		}
	}
	created, err := s.storeImage(ctx, u)
	if errors.Is(err, storage.ErrUploadTokenSpent) && c.token != nil {
		return storage.Image{}, false, s.tokenSpent(c)
	}
	if err != nil {
		return storage.Image{}, false, err
	}
	return u.img, created, nil
}

// storeImage stores an upload that passed uploadSteps (storage/doc.go):
// an image the user already has is returned as it is (created false) and
// nothing is written but the spending of an upload token's use;
// otherwise the upload's own blob key is reserved, the blob written, and
// the row committed with its metadata in one transaction that claims the
// reservation, spends the upload token's use and makes the checks that
// have a twin again. Whatever fails on the way, no row names a missing
// blob, and the blob of an upload that does not commit is collected.
func (s *Server) storeImage(ctx context.Context, u *pendingUpload) (bool, error) {
	img, data := &u.img, u.data
	if u.stored != nil {
		if err := s.spendUploadToken(ctx, img.UploadToken); err != nil {
			return false, err
		}
		*img = *u.stored
		return false, nil
	}
	img.BlobToken = storage.NewBlobToken()
	res, err := s.images.Reserve(ctx, img.Key())
	if err != nil {
		return false, err
	}
	if err := s.blobs.Put(ctx, res.Key, data); err != nil {
		s.release(ctx, res)
		return false, fmt.Errorf("store image %s/%s: %w", img.User, img.Identifier, err)
	}
	// A video's poster is stored once it is committed, and its copies are
	// built from the poster (a job that runs first is retried).
	created, err := s.images.CommitImage(ctx, img, res, s.builder.Wants(img.Width, img.Height, img.Size))
	if err != nil {
		s.release(ctx, res)
		return false, err
	}
	if !created {
		s.collector.Wake() // a concurrent upload of the same bytes won
	} else {
		s.usage.Add(storage.MetricUploads, img.User, 1)
		s.usage.Add(storage.MetricUploadBytes, img.User, img.Size)
		s.storePoster(ctx, *img, u.call.upload.poster)
		s.builder.Wake() // its variation job, if it has one
	}
	return created, nil
}

// release gives up a reservation whose blob will not be named by a row, so
// the collector deletes it now rather than when it expires.
func (s *Server) release(ctx context.Context, res storage.Reservation) {
	if err := s.images.Release(context.WithoutCancel(ctx), res); err != nil {
		s.log.Warn("release blob reservation (it expires by itself)", "key", res.Key, "err", err)
		return
	}
	s.collector.Wake()
}
