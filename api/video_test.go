package api_test

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/engine/videotest"
)

// videoEnv is an env whose engine takes videos under v's limits.
func videoEnv(t *testing.T, cfg api.Config, v engine.VideoUploads) *env {
	t.Helper()
	v.Video = true
	eng, err := engine.New(engine.Config{Uploads: engine.Uploads{VideoUploads: v}})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cfg, func(d *api.Deps) { d.Engine = eng })
}

// decoded returns an answer's image type, width, height and mean.
func decoded(t *testing.T, b []byte) (vips.ImageType, int, int, float64) {
	t.Helper()
	ref, err := vips.NewImageFromBuffer(b)
	if err != nil {
		t.Fatalf("answer is not an image: %v", err)
	}
	defer ref.Close()
	m, err := ref.Average()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Format(), ref.Width(), ref.Height(), m
}

// TestVideoUpload: a video is stored as sent and listed as a video; its
// poster (not the black first frame) answers every image request at its
// size, through chains and negotiation; a lost poster is made again;
// deleting the video deletes the poster's blob.
func TestVideoUpload(t *testing.T) {
	videotest.Need(t)
	data := videotest.H264(t, t.TempDir())
	e := videoEnv(t, testConfig(), engine.VideoUploads{})
	r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, data)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.StatusCode, r.body)
	}
	up := r.json(t)
	id, _ := up["imageIdentifier"].(string)
	if up["extension"] != "mp4" || up["width"] != 640.0 || up["height"] != 360.0 {
		t.Fatalf("upload answer %v", up)
	}
	list := e.get(e.tokenURL("/users/alice/images?fields[]=mime&fields[]=video&fields[]=blurhash", userPriv)).json(t)
	entry := list["images"].([]any)[0].(map[string]any)
	v, _ := entry["video"].(map[string]any)
	if entry["mime"] != "video/mp4" || v["codec"] != "h264" || v["fps"] != 25.0 || v["duration"].(float64) < 3.9 || entry["blurhash"] == nil {
		t.Fatalf("listing entry %v", entry)
	}
	path := "/users/alice/images/" + id
	if r := e.get(e.tokenURL(path, userPriv)); r.StatusCode != 200 || !bytes.Equal(r.body, data) || r.Header.Get("Content-Type") != "video/mp4" {
		t.Fatalf("original: %d %s, %d bytes", r.StatusCode, r.Header.Get("Content-Type"), len(r.body))
	}
	for _, c := range []struct {
		query, accept string
		typ           vips.ImageType
		w, h          int
	}{
		{".jpg", "", vips.ImageTypeJPEG, 640, 360},
		{".png?t[]=thumbnail:width=160,height=90", "", vips.ImageTypePNG, 160, 90},
		{"?t[]=resize:width=320", "image/webp", vips.ImageTypeWEBP, 320, 180},
		{".jpg?t[]=crop:width=100,height=100,x=10,y=10&t[]=desaturate", "", vips.ImageTypeJPEG, 100, 100},
	} {
		var h []string
		if c.accept != "" {
			h = []string{"Accept", c.accept}
		}
		r := e.get(e.tokenURL(path+c.query, userPriv), h...)
		if r.StatusCode != 200 || r.Header.Get("X-Service-Source") != "poster" {
			t.Fatalf("GET %s: %d source %q %s", c.query, r.StatusCode, r.Header.Get("X-Service-Source"), r.body)
		}
		typ, w, h2, mean := decoded(t, r.body)
		if typ != c.typ || w != c.w || h2 != c.h || mean < 40 {
			t.Fatalf("GET %s: %v %dx%d mean %.1f", c.query, typ, w, h2, mean)
		}
	}
	// A frame step decodes the video itself: the frame at half its
	// duration, then the rest of the chain.
	fr := e.get(e.tokenURL(path+".png?t[]=frame:at=0.5&t[]=thumbnail:width=160,height=90", userPriv))
	if typ, w, h, _ := decoded(t, fr.body); fr.StatusCode != 200 || fr.Header.Get("X-Service-Source") != "video" ||
		fr.Header.Get("X-Service-Frame-Time") != "2.000" || typ != vips.ImageTypePNG || w != 160 || h != 90 {
		t.Fatalf("frame: %d %v %dx%d %v", fr.StatusCode, typ, w, h, fr.Header)
	}
	if r := e.get(e.tokenURL(path+".jpg?t[]=resize:width=100&t[]=frame:time=1", userPriv)); r.StatusCode != 400 {
		t.Fatalf("frame not first: %d %s", r.StatusCode, r.body)
	}
	img, err := e.db.Image(t.Context(), "alice", id)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := e.db.Variations(t.Context(), img)
	if err != nil || len(vs) != 1 || vs[0].Ext != "jpg" || vs[0].Width != 640 {
		t.Fatalf("variations %+v, %v; want the poster", vs, err)
	}
	if r := e.signed(http.MethodDelete, path, userKey, userPriv, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("delete: %d %s", r.StatusCode, r.body)
	}
	e.drain()
	if ok, err := e.blobs.Exists(t.Context(), vs[0].Key); err != nil || ok {
		t.Fatalf("poster blob exists = %v, %v after the delete", ok, err)
	}
}

// TestVideoRefusals: with uploads.video off a video is refused naming the
// setting; with it on, an image is still held to limits.maxBodyBytes while
// a video may reach uploads.videoMaxBytes; an upload token's formats apply
// to videos.
func TestVideoRefusals(t *testing.T) {
	videotest.Need(t)
	data := videotest.H264(t, t.TempDir())
	off := newEnv(t, testConfig())
	r := off.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, data)
	if r.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(r.errMessage(t), "uploads.video is off") {
		t.Fatalf("video off: %d %s", r.StatusCode, r.body)
	}
	cfg := testConfig()
	cfg.Limits.MaxBodyBytes = int64(len(data)) / 2
	e := videoEnv(t, cfg, engine.VideoUploads{})
	if r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, data); r.StatusCode != http.StatusCreated {
		t.Fatalf("video over limits.maxBodyBytes: %d %s", r.StatusCode, r.body)
	}
	// The size is checked before the image is decoded: trailing bytes
	// make a PNG as large as the video.
	big := append(pngImage(t, 64, 64, 3), make([]byte, len(data))...)
	r = e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, big)
	if r.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(r.errMessage(t), "limits.maxBodyBytes") {
		t.Fatalf("image over limits.maxBodyBytes: %d %s", r.StatusCode, r.body)
	}
	// A 2-second video is refused by uploads.videoMaxSeconds, from its
	// header.
	short := videoEnv(t, testConfig(), engine.VideoUploads{VideoMaxSeconds: 2})
	r = short.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, data)
	if r.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(r.errMessage(t), "uploads.videoMaxSeconds") {
		t.Fatalf("too long: %d %s", r.StatusCode, r.body)
	}
}

// TestVideoSpriteTrack: a .vtt of a sprite has a cue per tile, in order,
// the last ending with the video; each cue names the sprite as a signed
// JPEG URL that answers the sprite, its #xywh the tile's place in it. A
// .vtt of another chain or of an image is refused.
func TestVideoSpriteTrack(t *testing.T) {
	videotest.Need(t)
	e := videoEnv(t, testConfig(), engine.VideoUploads{})
	r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, videotest.H264(t, t.TempDir()))
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.StatusCode, r.body)
	}
	path := "/users/alice/images/" + r.json(t)["imageIdentifier"].(string)
	vtt := e.get(e.tokenURL(path+".vtt?t[]=sprite:columns=4,rows=2,width=160", userPriv))
	if vtt.StatusCode != 200 || vtt.Header.Get("Content-Type") != "text/vtt; charset=utf-8" || !strings.HasPrefix(string(vtt.body), "WEBVTT\n") {
		t.Fatalf("vtt: %d %s %s", vtt.StatusCode, vtt.Header.Get("Content-Type"), vtt.body)
	}
	cues := strings.Split(strings.TrimSpace(string(vtt.body)), "\n\n")[1:]
	if len(cues) != 8 {
		t.Fatalf("%d cues, want 8:\n%s", len(cues), vtt.body)
	}
	var sprite string
	for i, cue := range cues {
		lines := strings.Split(cue, "\n")
		start, end := fmt.Sprintf("00:00:%02d.%03d", i/2, i%2*500), fmt.Sprintf("00:00:%02d.%03d", (i+1)/2, (i+1)%2*500)
		if i == 7 {
			end = lines[0][strings.Index(lines[0], "--> ")+4:] // the video's duration
		}
		u, xywh, _ := strings.Cut(lines[1], "#xywh=")
		if len(lines) != 2 || lines[0] != start+" --> "+end || xywh != fmt.Sprintf("%d,%d,160,90", i%4*160, i/4*90) {
			t.Fatalf("cue %d = %q", i, cue)
		}
		if sprite = u; !strings.HasPrefix(u, e.url+path+".jpg?t[]=sprite:columns=4,rows=2,width=160&accessToken=") {
			t.Fatalf("cue %d names %s", i, u)
		}
	}
	if last := cues[7][strings.Index(cues[7], "--> ")+4:]; !strings.HasPrefix(last, "00:00:03.9") && !strings.HasPrefix(last, "00:00:04.0") {
		t.Fatalf("last cue ends at %s, want the video's 4 s", last)
	}
	img := e.get(sprite)
	if typ, w, h, _ := decoded(t, img.body); img.StatusCode != 200 || typ != vips.ImageTypeJPEG || w != 640 || h != 180 {
		t.Fatalf("the cues' sprite: %d %v %dx%d", img.StatusCode, typ, w, h)
	}
	if r := e.get(e.tokenURL(path+".vtt?t[]=sprite:columns=4,rows=2&t[]=resize:width=100", userPriv)); r.StatusCode != 400 || !strings.Contains(r.errMessage(t), "only transformation") {
		t.Fatalf("vtt of a resized sprite: %d %s", r.StatusCode, r.body)
	}
	up := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, pngImage(t, 64, 64, 3))
	id := up.json(t)["imageIdentifier"].(string)
	if r := e.get(e.tokenURL("/users/alice/images/"+id+".vtt", userPriv)); r.StatusCode != 400 || !strings.Contains(r.errMessage(t), "not a video") {
		t.Fatalf("vtt of an image: %d %s", r.StatusCode, r.body)
	}
}

// TestVideoPosterCopies: the variations worker builds a video's smaller
// copies from its poster, as from an image's original, and a reducing
// chain renders from one of them (X-Service-Source: variation-<width>)
// with the look the poster gives; a chain that needs every pixel still
// renders from the poster.
func TestVideoPosterCopies(t *testing.T) {
	videotest.Need(t)
	var sv *api.StoredVariations
	cfg, off := testConfig(), false
	cfg.CacheVariants = &off // every GET renders
	e := newEnvWith(t, cfg, func(d *api.Deps) {
		eng, err := engine.New(engine.Config{Uploads: engine.Uploads{VideoUploads: engine.VideoUploads{Video: true}}})
		if err != nil {
			t.Fatal(err)
		}
		if sv, err = api.NewStoredVariations(d.DB, d.Blobs, eng, api.VariationsConfig{MinWidth: 320}); err != nil {
			t.Fatal(err)
		}
		d.Engine, d.Variations = eng, sv
	})
	id := e.upload(videotest.H264(t, t.TempDir()))
	path := "/users/alice/images/" + id
	const chain = ".png?t[]=resize:width=300"
	before := e.get(e.tokenURL(path+chain, userPriv))
	if before.StatusCode != 200 || before.Header.Get("X-Service-Source") != "poster" {
		t.Fatalf("before the copies: %d source %q %s", before.StatusCode, before.Header.Get("X-Service-Source"), before.body)
	}
	// The job the upload queued, taken by the worker, builds the copies.
	if taken, err := sv.Pass(t.Context()); err != nil || taken != 1 {
		t.Fatalf("the upload's variation job: %d taken, %v; want 1", taken, err)
	}
	img, err := e.db.Image(t.Context(), "alice", id)
	if err != nil {
		t.Fatal(err)
	}
	if vs, err := e.db.Variations(t.Context(), img); err != nil || len(vs) != 4 {
		t.Fatalf("variations %+v, %v; want the poster and 3 copies of it", vs, err)
	}
	if again, err := sv.BuildImage(t.Context(), "alice", id); err != nil || again.Variations != 0 {
		t.Fatalf("BuildImage again = %+v, %v; want nothing more", again, err)
	}
	after := e.get(e.tokenURL(path+chain, userPriv))
	if after.StatusCode != 200 || after.Header.Get("X-Service-Source") != "variation-320" {
		t.Fatalf("after the copies: %d source %q %s", after.StatusCode, after.Header.Get("X-Service-Source"), after.body)
	}
	_, w, h, m1 := decoded(t, before.body)
	_, w2, h2, m2 := decoded(t, after.body)
	if w != 300 || w2 != 300 || h != h2 || math.Abs(m1-m2) > 1 {
		t.Fatalf("from the poster %dx%d mean %.2f, from its copy %dx%d mean %.2f; want the same picture", w, h, m1, w2, h2, m2)
	}
	if r := e.get(e.tokenURL(path+".jpg?t[]=crop:width=100,height=100,x=10,y=10", userPriv)); r.StatusCode != 200 || r.Header.Get("X-Service-Source") != "poster" {
		t.Fatalf("a crop: %d source %q", r.StatusCode, r.Header.Get("X-Service-Source"))
	}
}

// TestVideoRanges: a video's original answers byte ranges, as a browser's
// player asks for them when it seeks: 206 with Content-Range, the bytes of
// the range, If-Range with the ETag, 416 past the end; HEAD says it takes
// ranges.
func TestVideoRanges(t *testing.T) {
	videotest.Need(t)
	data := videotest.H264(t, t.TempDir())
	e := videoEnv(t, testConfig(), engine.VideoUploads{})
	url := e.tokenURL("/users/alice/images/"+e.upload(data), userPriv)
	if r := e.request(http.MethodHead, url, nil); r.StatusCode != 200 || r.Header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("HEAD: %d %v", r.StatusCode, r.Header)
	}
	r := e.get(url, "Range", "bytes=1000-1999")
	if r.StatusCode != http.StatusPartialContent || r.Header.Get("Content-Range") != fmt.Sprintf("bytes 1000-1999/%d", len(data)) ||
		!bytes.Equal(r.body, data[1000:2000]) || r.Header.Get("Content-Type") != "video/mp4" {
		t.Fatalf("range: %d %v, %d bytes", r.StatusCode, r.Header, len(r.body))
	}
	etag := r.Header.Get("ETag")
	if r := e.get(url, "Range", "bytes=-100", "If-Range", etag); r.StatusCode != http.StatusPartialContent || !bytes.Equal(r.body, data[len(data)-100:]) {
		t.Fatalf("suffix range with If-Range: %d, %d bytes", r.StatusCode, len(r.body))
	}
	if r := e.get(url, "Range", "bytes=0-9", "If-Range", `"another"`); r.StatusCode != 200 || !bytes.Equal(r.body, data) {
		t.Fatalf("If-Range of another version: %d, %d bytes; want the whole video", r.StatusCode, len(r.body))
	}
	if r := e.get(url, "Range", fmt.Sprintf("bytes=%d-", len(data)+10)); r.StatusCode != http.StatusRequestedRangeNotSatisfiable ||
		r.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(data)) || !strings.Contains(r.errMessage(t), "ask for bytes from 0 to") {
		t.Fatalf("past the end: %d %v %s", r.StatusCode, r.Header, r.body)
	}
}
