package e2e

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math/bits"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// mateNature holds the photographs of Debian's mate-backgrounds package
// (make test-deps installs it).
const mateNature = "/usr/share/backgrounds/mate/nature"

// blocklistKeys: moderator manages the blocklist (group all), alice, bob
// and carol upload for themselves.
const blocklistKeysConfig = `accessControl:
  keys:
    - publicKey: moderator
      privateKey: moderator-secret
      rules: [{users: "*", group: all}]
    - publicKey: alice
      privateKey: alice-secret
      rules: [{users: [alice], group: read-write}]
    - publicKey: bob
      privateKey: bob-secret
      rules: [{users: [bob], group: read-write}]
    - publicKey: carol
      privateKey: carol-secret
      rules: [{users: [carol], group: read-write}]
`

var moderatorKey = key{Public: "moderator", Private: "moderator-secret"}

// photo returns a photograph of mate-backgrounds, or, where the package is
// missing, a picture drawn from seed that a perceptual hash sees as one
// (overlapping rectangles: a smooth gradient is not).
func photo(t *testing.T, name string, seed uint64) []byte {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(mateNature, name)); err == nil {
		return b
	}
	t.Logf("%s not found (apt-get install mate-backgrounds): a drawn picture stands in for it", name)
	rng := rand.New(rand.NewPCG(seed, 7))
	img := image.NewNRGBA(image.Rect(0, 0, 1280, 960))
	for range 40 {
		c := color.NRGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255}
		x0, y0 := rng.IntN(1280), rng.IntN(960)
		x1, y1 := x0+rng.IntN(640), y0+rng.IntN(480)
		for y := y0; y < min(y1, 960); y++ {
			for x := x0; x < min(x1, 1280); x++ {
				img.SetNRGBA(x, y, c)
			}
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 92}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// resizedJPEG decodes data, scales it to scale of its size by averaging
// the source pixels under each output pixel, and encodes it as a JPEG of
// the quality: what a re-upload of a picture taken from a web page looks
// like.
func resizedJPEG(t *testing.T, data []byte, scale float64, quality int) []byte {
	t.Helper()
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	sb := src.Bounds()
	w, h := int(float64(sb.Dx())*scale), int(float64(sb.Dy())*scale)
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		sy0, sy1 := sb.Min.Y+y*sb.Dy()/h, sb.Min.Y+max((y+1)*sb.Dy()/h, y*sb.Dy()/h+1)
		for x := range w {
			sx0, sx1 := sb.Min.X+x*sb.Dx()/w, sb.Min.X+max((x+1)*sb.Dx()/w, x*sb.Dx()/w+1)
			var r, g, b, n uint64
			for sy := sy0; sy < sy1; sy++ {
				for sx := sx0; sx < sx1; sx++ {
					cr, cg, cb, _ := src.At(sx, sy).RGBA()
					r, g, b, n = r+uint64(cr), g+uint64(cg), b+uint64(cb), n+1
				}
			}
			dst.SetRGBA(x, y, color.RGBA{uint8(r / n >> 8), uint8(g / n >> 8), uint8(b / n >> 8), 255})
		}
	}
	var out bytes.Buffer
	if err := jpeg.Encode(&out, dst, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// phashOf reads an image's perceptual hash from its user's listing.
func (s *server) phashOf(t *testing.T, user, id string, k key) uint64 {
	t.Helper()
	r := s.get(t, "/users/"+user+"/images?ids[]="+id+"&fields[]=phash", k)
	wantStatus(t, "listing with the phash", r, http.StatusOK)
	var l struct {
		Images []struct{ Phash string } `json:"images"`
	}
	r.JSON(t, &l)
	if len(l.Images) != 1 {
		t.Fatalf("listing of %s/%s: %s", user, id, r.Body)
	}
	h, err := strconv.ParseUint(l.Images[0].Phash, 16, 64)
	if err != nil {
		t.Fatalf("phash of %s/%s: %q", user, id, l.Images[0].Phash)
	}
	return h
}

// blocklistAnswer is what POST /blocklist and its siblings answer.
type blocklistAnswer struct {
	Entry struct {
		ID       int64
		Phash    *string
		Distance *int
	}
	Removed []blocklistMatch
	Search  struct{ Hits int }
	Matches []blocklistMatch
}

type blocklistMatch struct {
	User            string
	ImageIdentifier string
	Distance        int
}

// TestBlocklistTakedown is the takedown against the binary: a photograph
// blocked by its perceptual hash (with the default distance, 6 bits) is
// refused with 451 when another user uploads it again resized to 60% and
// recompressed at JPEG quality 70, nothing of it is stored, an unrelated
// photograph is accepted, and the stored copies the entry matches, of
// every user, go in one removal.
func TestBlocklistTakedown(t *testing.T) {
	s := startServer(t, blocklistKeysConfig)
	alice, bob, carol := key{Public: "alice", Private: "alice-secret"}, key{Public: "bob", Private: "bob-secret"},
		key{Public: "carol", Private: "carol-secret"}
	orig := photo(t, "GreenMeadow.jpg", 1)
	copy60 := resizedJPEG(t, orig, 0.6, 70)
	upload := func(user string, k key, data []byte) *response {
		return s.write(t, http.MethodPost, "/users/"+user+"/images", data, k)
	}
	r := upload("alice", alice, orig)
	wantStatus(t, "alice uploads the photograph", r, http.StatusCreated)
	var up struct{ ImageIdentifier string }
	r.JSON(t, &up)
	hash := s.phashOf(t, "alice", up.ImageIdentifier, alice)
	// A copy carol stored before the takedown: the entry must find it.
	r = upload("carol", carol, resizedJPEG(t, orig, 0.5, 75))
	wantStatus(t, "carol uploads a copy", r, http.StatusCreated)
	var carols struct{ ImageIdentifier string }
	r.JSON(t, &carols)
	t.Logf("carol's copy (50%%, q75) is %d bits from the original", bits.OnesCount64(hash^s.phashOf(t, "carol", carols.ImageIdentifier, carol)))

	r = s.writeJSON(t, http.MethodPost, "/blocklist", map[string]any{"phash": fmt.Sprintf("%016x", hash), "reason": "takedown 2026-114"}, moderatorKey)
	wantStatus(t, "block the photograph by its hash", r, http.StatusCreated)
	var added blocklistAnswer
	r.JSON(t, &added)
	if added.Entry.Distance == nil || *added.Entry.Distance != 6 || added.Search.Hits != 2 || len(added.Matches) != 2 ||
		added.Matches[0].User != "alice" || added.Matches[0].Distance != 0 || added.Matches[1].User != "carol" {
		t.Fatalf("POST /blocklist: %s; want the entry at distance 6 and alice's and carol's images", r.Body)
	}

	t.Run("the copy is refused", func(t *testing.T) {
		r := upload("bob", bob, copy60)
		s.checkError(t, "bob uploads the copy (60%, q70)", r, http.StatusUnavailableForLegalReasons,
			fmt.Sprintf("This image is blocked (blocklist entry %d)", added.Entry.ID))
		l := s.get(t, "/users/bob/images", bob)
		var page struct{ Search struct{ Hits int } }
		l.JSON(t, &page)
		if page.Search.Hits != 0 {
			t.Fatalf("bob has %d images after the refusal: %s", page.Search.Hits, l.Body)
		}
	})
	t.Run("an unrelated photograph is accepted", func(t *testing.T) {
		wantStatus(t, "bob uploads another photograph", upload("bob", bob, photo(t, "FreshFlower.jpg", 2)), http.StatusCreated)
	})
	t.Run("the copy was within the distance", func(t *testing.T) {
		// What made it a match: the copy's hash, stored under another
		// user once the entry is gone, is within 6 bits of the original's.
		del := s.write(t, http.MethodDelete, fmt.Sprintf("/blocklist/%d", added.Entry.ID), nil, moderatorKey)
		wantStatus(t, "delete the entry", del, http.StatusOK)
		r := upload("bob", bob, copy60)
		wantStatus(t, "bob uploads the copy with no entry", r, http.StatusCreated)
		var got struct{ ImageIdentifier string }
		r.JSON(t, &got)
		d := bits.OnesCount64(hash ^ s.phashOf(t, "bob", got.ImageIdentifier, bob))
		t.Logf("the copy (60%%, q70) is %d bits from the original", d)
		if d > 6 {
			t.Fatalf("the copy is %d bits away, more than the entry's 6", d)
		}
		// Blocked again, with removal: every copy goes in one request.
		r = s.writeJSON(t, http.MethodPost, "/blocklist", map[string]any{"phash": fmt.Sprintf("%016x", hash), "remove": true}, moderatorKey)
		wantStatus(t, "block again, removing", r, http.StatusCreated)
		var res blocklistAnswer
		r.JSON(t, &res)
		if len(res.Removed) != 3 || res.Search.Hits != 0 {
			t.Fatalf("removal: %s; want alice's, bob's and carol's copies gone", r.Body)
		}
		for _, m := range res.Removed {
			wantStatus(t, "GET "+m.User+"/"+m.ImageIdentifier, s.get(t, "/users/"+m.User+"/images/"+m.ImageIdentifier, moderatorKey), http.StatusNotFound)
		}
		s.checkError(t, "alice uploads the original again", upload("alice", alice, orig), http.StatusUnavailableForLegalReasons,
			fmt.Sprintf("This image is blocked (blocklist entry %d)", res.Entry.ID))
	})
}

// TestAdminBlocklist blocks a photograph from its page in the admin UI,
// sees the entry's page list the copies of every user, deletes them after
// the confirmation, and finds the copy refused; every page passes axe at
// 1280 and 375 px (screenshots in $VITRINE_SCREENSHOTS).
func TestAdminBlocklist(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, blocklistKeysConfig)
	alice, carol := key{Public: "alice", Private: "alice-secret"}, key{Public: "carol", Private: "carol-secret"}
	orig := photo(t, "GreenMeadow.jpg", 1)
	r := s.write(t, http.MethodPost, "/users/alice/images", orig, alice)
	wantStatus(t, "alice uploads the photograph", r, http.StatusCreated)
	var up struct{ ImageIdentifier string }
	r.JSON(t, &up)
	wantStatus(t, "carol uploads a copy", s.write(t, http.MethodPost, "/users/carol/images", resizedJPEG(t, orig, 0.5, 75), carol), http.StatusCreated)

	ui := s.URL + "/admin"
	b.signIn(ui, moderatorKey, "overview")
	if n := b.count(`nav a[href$="/admin/blocklist"]`); n != 1 {
		t.Fatalf("the navigation has %d Blocklist entries", n)
	}
	b.open(ui+"/blocklist", "blocklist-empty")
	b.open(ui+"/users/alice/images/"+up.ImageIdentifier, "image")
	b.do(chromedp.Click(chromedp.CSS(`#block a`), chromedp.NodeVisible))
	b.waitFor(`document.getElementById("bl-image-image") && document.getElementById("bl-image-image").value !== ""`)
	if got := eval[string](b, `document.getElementById("bl-image-image").value`); got != up.ImageIdentifier {
		t.Fatalf("the form to block an image holds %q, want %s", got, up.ImageIdentifier)
	}
	b.do(chromedp.SetValue(chromedp.ID("bl-image-reason"), "Takedown notice 2026-114"))
	b.submit(`#add-image button[type=submit]`, "blocklist-entry")
	if notice := b.text(".notice-ok"); !strings.Contains(notice, "blocklist entries 1 and 2") {
		t.Fatalf("after blocking: %q", notice)
	}
	if n := b.count("#matches .tile"); n != 2 {
		t.Fatalf("the entry's page shows %d matches, want alice's photograph and carol's copy", n)
	}
	b.do(chromedp.Click(chromedp.CSS(`#matches a.btn-danger`), chromedp.NodeVisible))
	b.waitFor(`document.querySelector("form[action$='/remove']") !== null`)
	b.check("blocklist-remove-confirm")
	b.submit(`form[action$="/remove"] button[type=submit]`, "blocklist-removed")
	if notice := b.text(".notice-ok"); notice != "Deleted 2 matching images." || b.count("#no-matches") != 1 {
		t.Fatalf("after the removal: %q", notice)
	}
	b.open(ui+"/blocklist", "blocklist")
	if rows := b.count("#blocklist tbody tr"); rows != 2 {
		t.Fatalf("the list shows %d entries, want 2", rows)
	}
	s.checkError(t, "carol uploads another copy", s.write(t, http.MethodPost, "/users/carol/images", resizedJPEG(t, orig, 0.6, 70), carol),
		http.StatusUnavailableForLegalReasons, "This image is blocked (blocklist entry 2)")
}
