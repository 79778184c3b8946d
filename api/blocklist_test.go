package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/storage"
)

// picture is a w x h JPEG of overlapping rectangles drawn from seed, at
// JPEG quality q: the same seed at another size is the same picture
// resized (a perceptual hash of the smooth gradients of scene moves by up
// to 8 bits between sizes; these by none), another seed another picture
// (24 bits away or more).
func picture(t *testing.T, w, h int, seed uint64, q int) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	type rect struct {
		x0, y0, x1, y1 float64
		c              color.NRGBA
	}
	var rs []rect
	for range 24 {
		x, y := rng.Float64(), rng.Float64()
		rs = append(rs, rect{x, y, x + rng.Float64()*0.5, y + rng.Float64()*0.5,
			color.NRGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255}})
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for py := range h {
		for px := range w {
			fx, fy := (float64(px)+0.5)/float64(w), (float64(py)+0.5)/float64(h)
			c := color.NRGBA{uint8(fx * 120), uint8(fy * 120), 60, 255}
			for _, r := range rs {
				if fx >= r.x0 && fx < r.x1 && fy >= r.y0 && fy < r.y1 {
					c = r.c
				}
			}
			img.SetNRGBA(px, py, c)
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// admin sends a signed request as the admin key.
func (e *env) admin(method, path, body string) response {
	e.t.Helper()
	return e.signed(method, path, adminKey, adminPriv, []byte(body), "Content-Type", "application/json")
}

// uploadAs uploads data for user with the admin key and returns the
// answer.
func (e *env) uploadAs(user string, data []byte) response {
	e.t.Helper()
	return e.signed(http.MethodPost, "/users/"+user+"/images", adminKey, adminPriv, data)
}

// phashOf reads an image's perceptual hash from the listing.
func (e *env) phashOf(user, id string) string {
	e.t.Helper()
	r := e.get(e.tokenURL("/users/"+user+"/images?ids[]="+id+"&fields[]=phash&publicKey="+adminKey, adminPriv))
	var l api.Listing
	if err := json.Unmarshal(r.body, &l); err != nil || len(l.Images) != 1 || l.Images[0].PHash == "" {
		e.t.Fatalf("phash of %s/%s: %v %s", user, id, err, r.body)
	}
	return l.Images[0].PHash
}

// blocklistResult decodes an answer strictly into the API's type.
func blocklistResult(t *testing.T, r response, status int) api.BlocklistResult {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", r.StatusCode, status, r.body)
	}
	var res api.BlocklistResult
	strictDecode(t, r.body, &res)
	return res
}

// matchNames are the user/identifier:distance of the matches.
func matchNames(ms []api.BlocklistMatch) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s/%s:%d", m.User, m.ImageIdentifier, m.Distance))
	}
	return out
}

// wantBlocked checks that an upload answered 451 naming the entry.
func wantBlocked(t *testing.T, r response, entry int64) {
	t.Helper()
	want := fmt.Sprintf("This image is blocked (blocklist entry %d)", entry)
	if r.StatusCode != http.StatusUnavailableForLegalReasons || r.errMessage(t) != want {
		t.Fatalf("upload: %d %s, want 451 %q", r.StatusCode, r.body, want)
	}
}

// TestBlocklist drives the blocklist through the API: a hash entry that
// lists the matching images of every user and refuses a resized copy
// (and the picture again, which its user has), an unrelated picture
// accepted, a checksum entry, the refusals, listing, access control,
// removal of the matches through the ordinary deletion, and deletion of
// the entry, which applies at once.
func TestBlocklist(t *testing.T) {
	// A clock that stands still: the instance's copy of the hash entries
	// never expires, so each change must drop it.
	clk := newClock()
	e := newEnvWith(t, testConfig(), func(d *api.Deps) { d.Now = clk.now })
	photo, small, other := picture(t, 640, 480, 1, 90), picture(t, 384, 288, 1, 70), picture(t, 640, 480, 2, 90)
	orig := e.upload(photo)
	r := e.uploadAs("bob", picture(t, 480, 360, 1, 80))
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("bob's copy: %d %s", r.StatusCode, r.body)
	}
	bobs := r.json(t)["imageIdentifier"].(string)
	hash := e.phashOf("alice", orig)

	added := blocklistResult(t, e.admin(http.MethodPost, "/blocklist",
		`{"phash": "`+strings.ToUpper(hash)+`", "reason": "takedown 1"}`), http.StatusCreated)
	entry := added.Entry
	if entry.PHash == nil || *entry.PHash != hash || entry.Distance == nil || *entry.Distance != 6 || entry.Checksum != nil ||
		entry.Reason != "takedown 1" || entry.Actor != adminKey || entry.ID == 0 {
		t.Fatalf("entry %+v", entry)
	}
	if got := matchNames(added.Matches); len(got) != 2 || got[0] != "alice/"+orig+":0" || !strings.HasPrefix(got[1], "bob/"+bobs+":") ||
		added.Search.Hits != 2 || len(added.Removed) != 0 {
		t.Fatalf("matches %q (%+v), removed %d; want alice's picture and bob's copy", got, added.Search, len(added.Removed))
	}
	t.Run("Upload", func(t *testing.T) {
		wantBlocked(t, e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, small), entry.ID)
		wantBlocked(t, e.uploadAs("carol", small), entry.ID)
		// Bytes the user has already: refused too, nothing changes.
		wantBlocked(t, e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, photo), entry.ID)
		if r := e.uploadAs("carol", other); r.StatusCode != http.StatusCreated {
			t.Fatalf("an unrelated picture: %d %s", r.StatusCode, r.body)
		}
		if page, err := e.db.Images(t.Context(), storage.Query{Users: []string{"carol"}}); err != nil || page.Hits != 1 {
			t.Fatalf("carol has %d images, %v; want the unrelated one only", page.Hits, err)
		}
	})

	sum := md5Hex(pngImage(t, 40, 30, 7))
	byChecksum := blocklistResult(t, e.admin(http.MethodPost, "/blocklist", `{"checksum": "`+strings.ToUpper(sum)+`"}`), http.StatusCreated)
	if c := byChecksum.Entry.Checksum; c == nil || *c != sum || byChecksum.Entry.PHash != nil || byChecksum.Entry.Distance != nil ||
		byChecksum.Search.Hits != 0 {
		t.Fatalf("checksum entry %+v", byChecksum)
	}
	t.Run("Checksum", func(t *testing.T) {
		wantBlocked(t, e.uploadAs("dave", pngImage(t, 40, 30, 7)), byChecksum.Entry.ID)
		if r := e.uploadAs("dave", pngImage(t, 40, 30, 8)); r.StatusCode != http.StatusCreated {
			t.Fatalf("other bytes: %d %s", r.StatusCode, r.body)
		}
	})
	t.Run("Refusals", func(t *testing.T) {
		for body, want := range map[string]string{
			`{}`: `A blocklist entry is {"checksum": "<md5>"} or {"phash": "<16 hex digits>", "distance": 0-64}`,
			`{"checksum": "` + sum + `", "phash": "` + hash + `"}`: `A blocklist entry is {"checksum": "<md5>"} or {"phash": "<16 hex digits>", "distance": 0-64}`,
			`{"checksum": "` + sum[1:] + `"}`:                      "checksum must be an MD5 sum: 32 hex digits",
			`{"checksum": "x` + sum[1:] + `"}`:                     "checksum must be an MD5 sum: 32 hex digits",
			`{"checksum": "` + md5Hex(nil) + `", "distance": 2}`:   "distance applies to a phash entry, not a checksum",
			`{"phash": "` + hash[1:] + `"}`:                        "phash must be a perceptual hash as listings show it: 16 hex digits",
			`{"phash": "+` + hash[1:] + `"}`:                       "phash must be a perceptual hash as listings show it: 16 hex digits",
			`{"phash": "0000000000000001", "distance": 65}`:        "distance must be an integer from 0 to 64",
			`{"phash": "0000000000000001", "distance": -1}`:        "distance must be an integer from 0 to 64",
			`{"phash": "0000000000000001", "distance": 64}`: "distance 64 would block most uploads of every user (unrelated " +
				`pictures differ in about 32 bits); use at most 32, or send "force": true`,
			`{"checksum": "` + md5Hex(nil) + `", "reason": "` + strings.Repeat("r", 1025) + `"}`: "A blocklist entry's reason is at most 1024 bytes",
		} {
			r := e.admin(http.MethodPost, "/blocklist", body)
			if r.StatusCode != http.StatusBadRequest || r.errMessage(t) != want {
				t.Errorf("%.60s: %d %s, want 400 %q", body, r.StatusCode, r.body, want)
			}
		}
		for body, want := range map[string]string{
			`{"checksum": "` + sum + `"}`:               fmt.Sprintf("Blocklist entry %d already blocks this checksum", byChecksum.Entry.ID),
			`{"phash": "` + hash + `", "distance": 10}`: fmt.Sprintf("Blocklist entry %d already blocks this perceptual hash", entry.ID),
		} {
			if r := e.admin(http.MethodPost, "/blocklist", body); r.StatusCode != http.StatusConflict || r.errMessage(t) != want {
				t.Errorf("%s: %d %s, want 409 %q", body, r.StatusCode, r.body, want)
			}
		}
	})
	t.Run("List", func(t *testing.T) {
		r := e.get(e.tokenURL("/blocklist?publicKey="+adminKey, adminPriv))
		var l api.BlocklistList
		strictDecode(t, r.body, &l)
		if r.StatusCode != 200 || l.Search.Hits != 2 || len(l.Entries) != 2 || l.Entries[0].ID != byChecksum.Entry.ID || l.Entries[1].ID != entry.ID {
			t.Fatalf("GET /blocklist: %d %s", r.StatusCode, r.body)
		}
		r = e.get(e.tokenURL("/blocklist?page=2&limit=1&publicKey="+adminKey, adminPriv))
		strictDecode(t, r.body, &l)
		if l.Search != (api.Search{Hits: 2, Page: 2, Limit: 1, Count: 1}) || l.Entries[0].ID != entry.ID {
			t.Fatalf("page 2: %s", r.body)
		}
		got := blocklistResult(t, e.get(e.tokenURL(fmt.Sprintf("/blocklist/%d?limit=1&page=2&publicKey=%s", entry.ID, adminKey), adminPriv)), http.StatusOK)
		if !reflect.DeepEqual(got.Entry, entry) || got.Search.Hits != 2 || len(got.Matches) != 1 || got.Matches[0].User != "bob" {
			t.Fatalf("GET /blocklist/%d page 2: %+v", entry.ID, got)
		}
		for _, path := range []string{"/blocklist/999999", "/blocklist/x1"} {
			if r := e.get(e.tokenURL(path+"?publicKey="+adminKey, adminPriv)); r.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s: %d %s", path, r.StatusCode, r.body)
			}
		}
	})
	t.Run("Access", func(t *testing.T) {
		// read-write and read-only hold no blocklist.* resource.
		for _, k := range []struct{ pub, priv string }{{userKey, userPriv}, {roKey, roPriv}} {
			id := fmt.Sprint(entry.ID)
			reqs := []response{
				e.get(e.tokenURL("/blocklist?publicKey="+k.pub, k.priv)),
				e.get(e.tokenURL("/blocklist/"+id+"?publicKey="+k.pub, k.priv)),
				e.signed(http.MethodPost, "/blocklist", k.pub, k.priv, []byte(`{"checksum": "`+md5Hex(nil)+`"}`), "Content-Type", "application/json"),
				e.signed(http.MethodPost, "/blocklist/"+id+"/remove", k.pub, k.priv, nil),
				e.signed(http.MethodDelete, "/blocklist/"+id, k.pub, k.priv, nil),
			}
			for i, r := range reqs {
				if r.StatusCode != 400 || !strings.HasPrefix(r.errMessage(t), "Permission denied (public key): the access rules of key ") {
					t.Errorf("%s, request %d: %d %s", k.pub, i, r.StatusCode, r.body)
				}
			}
		}
		if _, n, _ := e.db.Blocklist(t.Context(), 1, 0); n != 2 {
			t.Fatalf("%d entries after the refused changes, want 2", n)
		}
		if _, err := e.db.Image(t.Context(), "alice", orig); err != nil {
			t.Fatalf("a refused removal removed: %v", err)
		}
	})
	t.Run("Remove", func(t *testing.T) {
		key := e.blobKey("alice", orig)
		res := blocklistResult(t, e.admin(http.MethodPost, fmt.Sprintf("/blocklist/%d/remove", entry.ID), ""), http.StatusOK)
		if got := matchNames(res.Removed); len(got) != 2 || res.Search.Hits != 0 || len(res.Matches) != 0 {
			t.Fatalf("removed %q, %d left", got, res.Search.Hits)
		}
		for _, img := range []string{"alice/" + orig, "bob/" + bobs} {
			if _, err := e.db.Image(t.Context(), strings.Split(img, "/")[0], strings.Split(img, "/")[1]); err == nil {
				t.Errorf("%s is still stored", img)
			}
		}
		log, _, err := e.db.AuditLog(t.Context(), storage.AuditQuery{Action: "image.delete"})
		if err != nil || len(log) != 2 || log[0].Actor != adminKey || log[1].Actor != adminKey {
			t.Fatalf("audit of the deletions: %+v, %v", log, err)
		}
		e.drain()
		if _, err := e.blobs.Get(t.Context(), key); err == nil {
			t.Errorf("alice's blob %s outlived the removal", key)
		}
		// Removing again finds nothing.
		res = blocklistResult(t, e.admin(http.MethodPost, fmt.Sprintf("/blocklist/%d/remove", entry.ID), ""), http.StatusOK)
		if len(res.Removed) != 0 {
			t.Fatalf("second removal: %+v", res)
		}
		// An entry added with remove: true deletes what it matches at once.
		kept := md5Hex(pngImage(t, 40, 30, 8))
		res = blocklistResult(t, e.admin(http.MethodPost, "/blocklist", `{"checksum": "`+kept+`", "remove": true}`), http.StatusCreated)
		if got := matchNames(res.Removed); !slices.Equal(got, []string{"dave/" + kept + ":0"}) || res.Search.Hits != 0 {
			t.Fatalf("remove: true removed %q, %d left", got, res.Search.Hits)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		// An upload reads the hash entries into the instance's copy.
		if r := e.uploadAs("carol", picture(t, 640, 480, 5, 90)); r.StatusCode != http.StatusCreated {
			t.Fatalf("an unrelated picture: %d %s", r.StatusCode, r.body)
		}
		r := e.admin(http.MethodDelete, fmt.Sprintf("/blocklist/%d", entry.ID), "")
		var got api.BlocklistEntry
		strictDecode(t, r.body, &got)
		if r.StatusCode != http.StatusOK || !reflect.DeepEqual(got, entry) {
			t.Fatalf("DELETE: %d %s", r.StatusCode, r.body)
		}
		if r := e.admin(http.MethodDelete, fmt.Sprintf("/blocklist/%d", entry.ID), ""); r.StatusCode != http.StatusNotFound {
			t.Fatalf("DELETE again: %d %s", r.StatusCode, r.body)
		}
		// At once on this instance, although its copy of the hash entries
		// is not older than 5 seconds by its clock.
		if r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, small); r.StatusCode != http.StatusCreated {
			t.Fatalf("upload after the entry went: %d %s", r.StatusCode, r.body)
		}
		log, _, err := e.db.AuditLog(t.Context(), storage.AuditQuery{Action: "blocklist."})
		if err != nil || len(log) != 4 || log[0].Action != "blocklist.delete" || log[0].Actor != adminKey {
			t.Fatalf("audit: %+v, %v", log, err)
		}
	})
}

// clock is a settable clock for Deps.Now.
type clock struct{ at atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.at.Store(time.Now().UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.at.Load()) }
func (c *clock) advance(d time.Duration) { c.at.Add(int64(d)) }

// TestBlocklistOtherInstance: a second instance on the same database
// applies a new checksum entry at once and a new hash entry once its copy
// of the hash entries is older than 5 seconds (api/README.md "Takedowns"); its
// clock is moved, not waited for.
func TestBlocklistOtherInstance(t *testing.T) {
	e := newEnv(t, testConfig())
	clk := newClock()
	other := e.otherInstance(testConfig(), func(d *api.Deps) { d.Now = clk.now })

	orig := e.upload(picture(t, 640, 480, 3, 90))
	if r := other.uploadAs("bob", picture(t, 640, 480, 4, 90)); r.StatusCode != http.StatusCreated { // reads the hash entries: none
		t.Fatalf("first upload on the other instance: %d %s", r.StatusCode, r.body)
	}
	hash := blocklistResult(t, e.admin(http.MethodPost, "/blocklist", `{"phash": "`+e.phashOf("alice", orig)+`"}`), http.StatusCreated)
	sum := pngImage(t, 30, 20, 9)
	bySum := blocklistResult(t, e.admin(http.MethodPost, "/blocklist", `{"checksum": "`+md5Hex(sum)+`"}`), http.StatusCreated)

	wantBlocked(t, other.uploadAs("bob", sum), bySum.Entry.ID)
	if r := other.uploadAs("bob", picture(t, 320, 240, 3, 70)); r.StatusCode != http.StatusCreated {
		t.Fatalf("a copy within 5 seconds of the entry: %d %s, want 201 (the instance's copy is not older than 5s)", r.StatusCode, r.body)
	}
	clk.advance(5 * time.Second)
	wantBlocked(t, other.uploadAs("bob", picture(t, 400, 300, 3, 70)), hash.Entry.ID)
}

// TestBlocklistWithoutHashAnalysis: with analysis.perceptualHash off the
// upload's hash is computed for the check alone, so a hash entry still
// refuses a copy.
func TestBlocklistWithoutHashAnalysis(t *testing.T) {
	off := false
	cfg := testConfig()
	cfg.Analysis.PerceptualHash = &off
	e := newEnv(t, cfg)
	on := newEnv(t, testConfig()) // where the picture's hash is read
	hash := on.phashOf("alice", on.upload(picture(t, 640, 480, 6, 90)))
	entry := blocklistResult(t, e.admin(http.MethodPost, "/blocklist", `{"phash": "`+hash+`"}`), http.StatusCreated)
	wantBlocked(t, e.uploadAs("bob", picture(t, 384, 288, 6, 70)), entry.Entry.ID)
	if r := e.uploadAs("bob", picture(t, 640, 480, 7, 90)); r.StatusCode != http.StatusCreated {
		t.Fatalf("an unrelated picture: %d %s", r.StatusCode, r.body)
	}
}
