package api

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// The takedown blocklist (api/README.md "Takedowns"): /blocklist and its
// children, resources blocklist.*, in the built-in group all. Entries
// block a picture across every user by its MD5 or by its perceptual hash
// within a distance; an upload they block answers 451 before anything is
// stored, and the stored images an entry matches can be removed in one
// action through the ordinary image deletion.

// blocklistStore keeps the entries and finds what they match.
type blocklistStore interface {
	AddBlocklistEntry(ctx context.Context, e *storage.BlocklistEntry) error
	DeleteBlocklistEntry(ctx context.Context, id int64) error
	BlocklistEntry(ctx context.Context, id int64) (storage.BlocklistEntry, error)
	Blocklist(ctx context.Context, page, limit int) ([]storage.BlocklistEntry, int, error)
	BlocklistChecksums(ctx context.Context, checksums []string) ([]storage.BlocklistEntry, error)
	BlocklistHashes(ctx context.Context) ([]storage.BlocklistEntry, error)
	BlocklistMatches(ctx context.Context, e storage.BlocklistEntry, page, limit int) (storage.Page, error)
}

var _ blocklistStore = (*storage.DB)(nil)

// Why the hash entries are cached and the checksums are not: a checksum is
// one lookup in a unique index whatever the size of the list, while every
// hash entry must be compared with the upload's hash. The hash entries
// are few and change seldom, so each instance keeps them for
// blocklistRefresh; a change made through the instance drops its copy at
// once, and the other instances read it within blocklistRefresh.
const blocklistRefresh = 5 * time.Second

// blocklist is the store with this instance's copy of its hash entries.
type blocklist struct {
	store blocklistStore
	now   func() time.Time

	mu     sync.Mutex
	hashes []storage.BlocklistEntry
	loaded time.Time
	fresh  bool
}

// hashEntries returns the hash entries, read again when the copy is older
// than blocklistRefresh or was dropped. Why under the lock: a drop
// (changed) waits for a read under way, so a read that began before a
// change cannot keep its older list as fresh.
func (b *blocklist) hashEntries(ctx context.Context) ([]storage.BlocklistEntry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fresh && b.now().Sub(b.loaded) < blocklistRefresh {
		return b.hashes, nil
	}
	hashes, err := b.store.BlocklistHashes(ctx)
	if err != nil {
		return nil, err
	}
	b.hashes, b.loaded, b.fresh = hashes, b.now(), true
	return hashes, nil
}

// changed drops the copy of the hash entries after a change through this
// instance, so that the next upload is checked against the list as it is.
func (b *blocklist) changed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fresh = false
}

// errBlocked is the answer to an upload the entry id blocks.
func errBlocked(id int64) error {
	return errorf(http.StatusUnavailableForLegalReasons, "This image is blocked (blocklist entry %d)", id)
}

// checkBlockedChecksums answers 451 when an entry blocks one of sums: the
// MD5 of the bytes the client sent and of the bytes to be stored (they
// differ when a listener rewrote the upload).
func (s *Server) checkBlockedChecksums(ctx context.Context, sums ...string) error {
	entries, err := s.blocklist.store.BlocklistChecksums(ctx, slices.Compact(slices.Sorted(slices.Values(sums))))
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return errBlocked(entries[0].ID)
	}
	return nil
}

// checkBlockedHash answers 451 when the picture's perceptual hash is
// within a hash entry's distance. props are the upload's analysed
// properties; when they hold no hash (analysis.perceptualHash off, or an
// image the user has already) and there are hash entries, the hash is
// computed for the check alone. A hash that cannot be computed lets the
// upload through, logged: the checksums were checked, and one picture
// the engine cannot hash must not stop every upload.
func (s *Server) checkBlockedHash(ctx context.Context, props *storage.Properties, data []byte) error {
	entries, err := s.blocklist.hashEntries(ctx)
	if err != nil || len(entries) == 0 {
		return err
	}
	var hash uint64
	if props != nil && props.HasPHash {
		hash = props.PHash
	} else {
		a, err := s.engine.Analyze(ctx, data, engine.AnalyzeOptions{PHash: true})
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			s.log.Warn("blocklist: no perceptual hash of the upload; only its checksums were checked", "err", err)
			return nil
		}
		hash = a.PHash
	}
	for _, e := range entries {
		if e.Blocks(nil, hash, true) {
			return errBlocked(e.ID)
		}
	}
	return nil
}

// blocklistBody is the JSON of POST /blocklist.
type blocklistBody struct {
	Checksum *string `json:"checksum"`
	PHash    *string `json:"phash"`
	Distance *int    `json:"distance"`
	Reason   string  `json:"reason"`
	// Remove deletes the stored images the new entry matches.
	Remove bool `json:"remove"`
	// Force takes a distance over maxSafeDistance.
	Force bool `json:"force"`
}

// maxSafeDistance is the largest distance taken without "force": two
// unrelated pictures' hashes differ in about 32 of 64 bits, so an entry
// past it blocks a large part of every user's uploads (64: all of them).
const maxSafeDistance = 32

// defaultBlocklistDistance is a hash entry's distance when the body names
// none: a resized and recompressed copy is typically within 0-6 bits of
// its original, a different picture 20 or more (engine/README.md "Image analysis").
const defaultBlocklistDistance = 6

// entry checks b and returns the entry it asks for.
func (b blocklistBody) entry() (storage.BlocklistEntry, error) {
	e := storage.BlocklistEntry{Reason: b.Reason}
	switch {
	case (b.Checksum == nil) == (b.PHash == nil):
		return e, errorf(http.StatusBadRequest, `A blocklist entry is {"checksum": "<md5>"} or {"phash": "<16 hex digits>", "distance": 0-64}`)
	case b.Checksum != nil:
		sum := strings.ToLower(*b.Checksum)
		if _, err := hex.DecodeString(sum); err != nil || len(sum) != 32 {
			return e, errorf(http.StatusBadRequest, "checksum must be an MD5 sum: 32 hex digits")
		}
		if b.Distance != nil {
			return e, errorf(http.StatusBadRequest, "distance applies to a phash entry, not a checksum")
		}
		e.Checksum = sum
	default:
		h, err := strconv.ParseUint(*b.PHash, 16, 64)
		if err != nil || len(*b.PHash) != 16 {
			return e, errorf(http.StatusBadRequest, "phash must be a perceptual hash as listings show it: 16 hex digits")
		}
		e.PHash, e.HasPHash, e.Distance = h, true, defaultBlocklistDistance
		if b.Distance != nil {
			if *b.Distance < 0 || *b.Distance > 64 {
				return e, errorf(http.StatusBadRequest, "distance must be an integer from 0 to 64")
			}
			if *b.Distance > maxSafeDistance && !b.Force {
				return e, errorf(http.StatusBadRequest, "distance %d would block most uploads of every user (unrelated "+
					"pictures differ in about 32 bits); use at most %d, or send \"force\": true", *b.Distance, maxSafeDistance)
			}
			e.Distance = *b.Distance
		}
	}
	if len(e.Reason) > 1024 {
		return e, errorf(http.StatusBadRequest, "A blocklist entry's reason is at most 1024 bytes")
	}
	return e, nil
}

// blocklistEntryJSON is an entry as the API shows it.
func blocklistEntryJSON(e storage.BlocklistEntry) BlocklistEntry {
	out := BlocklistEntry{ID: e.ID, Reason: e.Reason, Actor: e.Actor, Created: e.Created.Format(time.RFC3339Nano)}
	if e.HasPHash {
		h, d := fmt.Sprintf("%016x", e.PHash), e.Distance
		out.PHash, out.Distance = &h, &d
	} else {
		out.Checksum = &e.Checksum
	}
	return out
}

// blocklistMatchJSON is a matching image as the API shows it.
func blocklistMatchJSON(img storage.Image) BlocklistMatch {
	m := BlocklistMatch{User: img.User, ImageIdentifier: img.Identifier, Extension: img.Extension, Size: img.Size,
		Width: img.Width, Height: img.Height, Checksum: img.Checksum, Distance: img.Distance,
		Added: img.Added.UTC().Format(time.RFC3339)}
	if img.OriginalChecksum != "" {
		m.OriginalChecksum = &img.OriginalChecksum
	}
	return m
}

// listBlocklist serves GET /blocklist: the entries, newest first, paged.
func (s *Server) listBlocklist(c *call) error {
	page, err := intParam(c.query, "page", 1, 1, 1<<30)
	if err != nil {
		return err
	}
	limit, err := intParam(c.query, "limit", 50, 1, 1000)
	if err != nil {
		return err
	}
	list, n, err := s.blocklist.store.Blocklist(c.ctx(), page, limit)
	if err != nil {
		return err
	}
	out := BlocklistList{Search: Search{Hits: n, Page: page, Limit: limit, Count: len(list)}, Entries: make([]BlocklistEntry, len(list))}
	for i, e := range list {
		out.Entries[i] = blocklistEntryJSON(e)
	}
	return c.writeJSON(out, outNoCache)
}

// postBlocklist serves POST /blocklist: 201 with the new entry and the
// stored images it matches; with "remove": true those are deleted first.
func (s *Server) postBlocklist(c *call) error {
	var b blocklistBody
	if err := c.readJSON(16<<10, &b); err != nil {
		return err
	}
	e, err := b.entry()
	if err != nil {
		return err
	}
	if err := s.blocklist.store.AddBlocklistEntry(c.ctx(), &e); err != nil {
		if errors.Is(err, storage.ErrExist) {
			return s.entryTaken(c.ctx(), e)
		}
		return err
	}
	s.blocklist.changed()
	var removed []storage.Image
	if b.Remove {
		if removed, err = s.removeMatches(c.ctx(), e); err != nil {
			return err
		}
	}
	c.w.Header().Set("Location", "/blocklist/"+strconv.FormatInt(e.ID, 10))
	return s.writeBlocklistResult(c, e, removed, http.StatusCreated)
}

// entryTaken is the 409 of an entry whose checksum or hash an entry
// blocks already, naming that entry.
func (s *Server) entryTaken(ctx context.Context, e storage.BlocklistEntry) error {
	var found []storage.BlocklistEntry
	var err error
	what := "checksum"
	if e.HasPHash {
		what = "perceptual hash"
		found, err = s.blocklist.store.BlocklistHashes(ctx)
		found = slices.DeleteFunc(found, func(f storage.BlocklistEntry) bool { return f.PHash != e.PHash })
	} else {
		found, err = s.blocklist.store.BlocklistChecksums(ctx, []string{e.Checksum})
	}
	if err != nil {
		return err
	}
	if len(found) == 0 { // deleted meanwhile
		return errorf(http.StatusConflict, "An entry blocked this %s; try again", what)
	}
	return errorf(http.StatusConflict, "Blocklist entry %d already blocks this %s", found[0].ID, what)
}

// entryParam reads the entry the path names.
func (s *Server) entryParam(c *call) (storage.BlocklistEntry, error) {
	id, err := strconv.ParseInt(c.params["entry"], 10, 64)
	if err != nil {
		return storage.BlocklistEntry{}, errorf(http.StatusNotFound, "Not Found")
	}
	e, err := s.blocklist.store.BlocklistEntry(c.ctx(), id)
	if errors.Is(err, storage.ErrNotExist) {
		return e, errorf(http.StatusNotFound, "Blocklist entry %d not found", id)
	}
	return e, err
}

// getBlocklistEntry serves GET /blocklist/{entry}: the entry and a page
// of the stored images it matches now.
func (s *Server) getBlocklistEntry(c *call) error {
	e, err := s.entryParam(c)
	if err != nil {
		return err
	}
	return s.writeBlocklistResult(c, e, nil, http.StatusOK)
}

// deleteBlocklistEntry serves DELETE /blocklist/{entry}: uploads it
// blocked are accepted again (on other instances within
// blocklistRefresh for a hash entry).
func (s *Server) deleteBlocklistEntry(c *call) error {
	e, err := s.entryParam(c)
	if err != nil {
		return err
	}
	if err := s.blocklist.store.DeleteBlocklistEntry(c.ctx(), e.ID); err != nil {
		return err
	}
	s.blocklist.changed()
	return c.writeJSON(blocklistEntryJSON(e), outNoCache)
}

// removeBlocked serves POST /blocklist/{entry}/remove: the stored images
// the entry matches are deleted.
func (s *Server) removeBlocked(c *call) error {
	e, err := s.entryParam(c)
	if err != nil {
		return err
	}
	removed, err := s.removeMatches(c.ctx(), e)
	if err != nil {
		return err
	}
	return s.writeBlocklistResult(c, e, removed, http.StatusOK)
}

// maxRemove is the most images one removal deletes; the answer's matches
// show what is left for the next.
const maxRemove = 1000

// removeMatches deletes the stored images e matches, of every user, each
// as DELETE /users/<user>/images/<id> does (its blobs through the
// deletion queue, its audit entry and event, which purge it from the
// CDN), up to maxRemove, and returns them. An image deleted meanwhile is
// skipped; the first other failure stops it (what went before stays gone).
func (s *Server) removeMatches(ctx context.Context, e storage.BlocklistEntry) ([]storage.Image, error) {
	removed := []storage.Image{}
	defer func() {
		if len(removed) > 0 {
			s.collector.Wake()
		}
	}()
	for len(removed) < maxRemove {
		page, err := s.blocklist.store.BlocklistMatches(ctx, e, 1, min(100, maxRemove-len(removed)))
		if err != nil {
			return removed, err
		}
		gone := 0
		for _, img := range page.Images {
			err := s.images.DeleteImage(ctx, img.User, img.Identifier)
			if isNotExist(err) {
				continue
			}
			if err != nil {
				return removed, err
			}
			removed = append(removed, img)
			gone++
		}
		if gone == 0 { // nothing matched, or what did went meanwhile
			break
		}
	}
	return removed, nil
}

// writeBlocklistResult answers the entry, the images removed and a page of
// the stored images it matches (`page`, `limit`).
func (s *Server) writeBlocklistResult(c *call, e storage.BlocklistEntry, removed []storage.Image, status int) error {
	page, err := intParam(c.query, "page", 1, 1, 1<<30)
	if err != nil {
		return err
	}
	limit, err := intParam(c.query, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	matches, err := s.blocklist.store.BlocklistMatches(c.ctx(), e, page, limit)
	if err != nil {
		return err
	}
	res := BlocklistResult{Entry: blocklistEntryJSON(e), Removed: make([]BlocklistMatch, len(removed)),
		Matches: make([]BlocklistMatch, len(matches.Images)),
		Search:  Search{Hits: matches.Hits, Page: page, Limit: limit, Count: len(matches.Images)}}
	for i, img := range removed {
		res.Removed[i] = blocklistMatchJSON(img)
	}
	for i, img := range matches.Images {
		res.Matches[i] = blocklistMatchJSON(img)
	}
	return c.writeJSON(res, out{status: status, cache: cacheNone})
}
