package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/storage"
)

// scene is a w x h JPEG picture with shapes; variant flips its colours so
// that it is a different picture, not a copy.
func scene(t *testing.T, w, h int, variant bool) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), 90, 255}
			if x < w/3 && y < h/2 {
				c = color.NRGBA{230, 30, 30, 255}
			}
			if variant {
				c = color.NRGBA{c.B, 255 - c.G, 255 - c.R, 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 85}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestAnalysisAtUpload(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(scene(t, 320, 240, false))
	r := e.get(e.tokenURL("/users/alice/images?ids[]="+id+"&metadata=1", userPriv))
	img := r.json(t)["images"].([]any)[0].(map[string]any)
	for _, k := range []string{"blurhash", "thumbhash", "averageColor", "phash"} {
		if s, _ := img[k].(string); s == "" {
			t.Errorf("%s missing from the listing: %s", k, r.body)
		}
	}
	if pal, _ := img["palette"].([]any); len(pal) == 0 {
		t.Errorf("palette missing: %s", r.body)
	}
	if md := img["metadata"].(map[string]any); len(md) != 0 {
		t.Errorf("properties mixed into the metadata (a JPEG without EXIF): %v", md)
	}
	t.Run("Fields", func(t *testing.T) {
		r := e.get(e.tokenURL("/users/alice/images?fields[]=blurhash&fields[]=imageIdentifier", userPriv))
		img := r.json(t)["images"].([]any)[0].(map[string]any)
		if len(img) != 2 || img["blurhash"] == nil {
			t.Fatalf("fields[]=blurhash: %s", r.body)
		}
	})
}

func TestAnalysisOff(t *testing.T) {
	off := false
	cfg := testConfig()
	cfg.Analysis = api.Analysis{EXIF: &off, Placeholders: &off, Colors: &off, PerceptualHash: &off}
	e := newEnv(t, cfg)
	id := e.upload(scene(t, 64, 48, false))
	r := e.get(e.tokenURL("/users/alice/images", userPriv))
	img := r.json(t)["images"].([]any)[0].(map[string]any)
	if _, ok := img["blurhash"]; ok {
		t.Fatalf("analysis off, yet %s", r.body)
	}
	r = e.get(e.tokenURL("/users/alice/images?similarTo="+id, userPriv))
	if r.StatusCode != 400 || !strings.Contains(r.errMessage(t), "not been analysed") {
		t.Fatalf("similarTo an unanalysed image: %d %s", r.StatusCode, r.body)
	}
}

func TestSimilarTo(t *testing.T) {
	e := newEnv(t, testConfig())
	orig := e.upload(scene(t, 640, 480, false))
	small := e.upload(scene(t, 200, 150, false))
	other := e.upload(scene(t, 640, 480, true))
	list := func(q string) []string {
		t.Helper()
		r := e.get(e.tokenURL("/users/alice/images?"+q, userPriv))
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d %s", q, r.StatusCode, r.body)
		}
		var ids []string
		for _, v := range r.json(t)["images"].([]any) {
			img := v.(map[string]any)
			if _, ok := img["distance"].(float64); !ok {
				t.Fatalf("no distance in %v", img)
			}
			ids = append(ids, img["imageIdentifier"].(string))
		}
		return ids
	}
	if got := list("similarTo=" + orig); len(got) != 1 || got[0] != small {
		t.Errorf("similarTo the original = %v, want only the small copy %s", got, small)
	}
	if got := list("similarTo=" + orig + "&maxDistance=64"); len(got) != 2 || got[0] != small || got[1] != other {
		t.Errorf("maxDistance=64 = %v, want %s then %s", got, small, other)
	}
	t.Run("Global", func(t *testing.T) {
		r := e.get(e.tokenURL("/images?publicKey="+adminKey+"&users[]=alice&similarTo="+url.QueryEscape("alice/"+orig), adminPriv))
		if r.StatusCode != 200 || len(r.json(t)["images"].([]any)) != 1 {
			t.Fatalf("/images similarTo: %d %s", r.StatusCode, r.body)
		}
	})
	for q, msg := range map[string]string{
		"maxDistance=3":                         "maxDistance needs similarTo, the identifier of an image",
		"similarTo=" + orig + "&maxDistance=65": "maxDistance must be an integer from 0 to 64",
		"similarTo=" + orig + "&maxDistance=x":  "maxDistance must be an integer from 0 to 64",
		"similarTo=" + orig + "&sort[]=size":    "sort cannot be combined with similarTo: similar images come nearest first",
		"similarTo=nope":                        "similarTo: image nope of user alice not found",
		"similarTo=bob/" + orig:                 "similarTo names an image of a user not listed: bob",
	} {
		if r := e.get(e.tokenURL("/users/alice/images?"+q, userPriv)); r.StatusCode != http.StatusBadRequest || r.errMessage(t) != msg {
			t.Errorf("%s: %d %s", q, r.StatusCode, r.body)
		}
	}
}

// TestEXIFAtUpload uploads a JPEG whose EXIF, GPS and IPTC exiftool wrote
// and finds them typed under metadata.exif, GPS left out by default.
func TestEXIFAtUpload(t *testing.T) {
	tool, err := exec.LookPath("exiftool")
	if err != nil {
		t.Skip("exiftool is not installed (apt-get install libimage-exiftool-perl)")
	}
	path := filepath.Join(t.TempDir(), "camera.jpg")
	if err := os.WriteFile(path, scene(t, 64, 48, false), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "-q", "-overwrite_original", "-EXIF:Make=Nikon", "-EXIF:ISO=200",
		"-EXIF:DateTimeOriginal=2023:12:24 18:00:00", "-GPS:GPSLatitude=1.5", "-GPS:GPSLatitudeRef=S",
		"-IPTC:Keywords=snow", path).CombinedOutput(); err != nil {
		t.Fatalf("exiftool: %v %s", err, out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, testConfig())
	id := e.upload(data)
	r := e.get(e.tokenURL("/users/alice/images/"+id+"/metadata", userPriv))
	md, _ := r.json(t)["exif"].(map[string]any)
	if md["Make"] != "Nikon" || md["ISOSpeedRatings"] != 200.0 || md["DateTimeOriginal"] != "2023-12-24T18:00:00" {
		t.Errorf("metadata.exif = %s", r.body)
	}
	if kw, _ := md["IPTC:Keywords"].([]any); len(kw) != 1 || kw[0] != "snow" {
		t.Errorf("IPTC keywords: %s", r.body)
	}
	for k := range md {
		if strings.HasPrefix(k, "GPS") {
			t.Errorf("GPS kept by default: %s", r.body)
		}
	}
}

func TestAnalysisConfig(t *testing.T) {
	for name, a := range map[string]api.Analysis{
		"BadPattern": {EXIFTags: []string{"[Make"}},
		"Palette":    {PaletteSize: 17},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Analysis = a
			cfg.Defaults()
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "analysis.") {
				t.Fatalf("analysis %+v: err %v, want one naming analysis.*", a, err)
			}
		})
	}
}

func TestRejectNearDuplicates(t *testing.T) {
	cfg := testConfig()
	ten := 10
	cfg.Analysis.RejectNearDuplicates = &ten
	e := newEnv(t, cfg)
	orig := e.upload(scene(t, 640, 480, false))
	r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, scene(t, 200, 150, false))
	if r.StatusCode != http.StatusConflict || !strings.Contains(r.errMessage(t), "near duplicate of "+orig) {
		t.Fatalf("near duplicate: %d %s", r.StatusCode, r.body)
	}
	if again := e.upload(scene(t, 640, 480, false)); again != orig {
		t.Fatalf("the same bytes again: %s, want %s (200, not a conflict)", again, orig)
	}
	e.upload(scene(t, 640, 480, true)) // a different picture passes
	r = e.get(e.tokenURL("/users/alice/images", userPriv))
	if n := len(r.json(t)["images"].([]any)); n != 2 {
		t.Fatalf("%d images stored, want 2 (the refused one left nothing)", n)
	}
}

// interleaved is a real store where another writer sets the key
// `meanwhile` right after every read: between StoreEXIF's read and its
// write, where a read-modify-write would lose it.
type interleaved struct{ *storage.DB }

func (s interleaved) Metadata(ctx context.Context, user, id string) (map[string]any, error) {
	md, err := s.DB.Metadata(ctx, user, id)
	if err == nil {
		_, err = s.DB.MergeMetadata(ctx, user, id, map[string]any{"meanwhile": true})
	}
	return md, err
}

// TestStoreEXIF: `vitrine analyze` stores EXIF tags by the rule of uploads
// (an `exif` key already there wins; the size and depth limits hold) and
// writes only its key, so a key written concurrently is kept.
func TestStoreEXIF(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := storage.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "vitrine.db"), storage.Options{Secret: []byte("s")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tags := map[string]any{"Make": "Nikon", "Lens": map[string]any{"Model": "50mm"}}
	for i, tc := range []struct {
		name    string
		md      map[string]any
		lim     api.Limits
		written bool
		leftOut bool
	}{
		{"Defaults", map[string]any{"title": "t"}, api.Limits{}, true, false},
		{"ExifTaken", map[string]any{"exif": "mine"}, api.Limits{}, false, false},
		{"OverMaxMetadataBytes", map[string]any{"title": "t"}, api.Limits{MaxMetadataBytes: 60}, false, true},
		{"OverMaxMetadataDepth", map[string]any{"title": "t"}, api.Limits{MaxMetadataDepth: 2}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("img%d", i)
			img := storage.Image{User: "u", Identifier: id, Size: 1, Extension: "png", Mime: "image/png", Width: 1, Height: 1, Metadata: tc.md}
			if _, err := db.InsertImage(ctx, &img); err != nil {
				t.Fatal(err)
			}
			written, err := api.StoreEXIF(ctx, interleaved{db}, tc.lim, "u", id, tags)
			if written != tc.written || errors.Is(err, api.ErrEXIFLeftOut) != tc.leftOut || (err != nil && !tc.leftOut) {
				t.Fatalf("StoreEXIF = %v, %v; want %v, left out %v", written, err, tc.written, tc.leftOut)
			}
			md, err := db.Metadata(ctx, "u", id)
			if err != nil {
				t.Fatal(err)
			}
			want := maps.Clone(tc.md)
			want["meanwhile"] = true
			if tc.written {
				want["exif"] = tags
			}
			if fmt.Sprint(md) != fmt.Sprint(want) {
				t.Errorf("metadata %v, want %v", md, want)
			}
		})
	}
}
