package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/engine/videotest"
)

// TestVideoLargeUploads: a 200 MB video goes up by tus (8 MiB parts, with
// an upload token) and by a POST with an upload token, each stored as sent,
// listed as a video with a poster.
func TestVideoLargeUploads(t *testing.T) {
	videotest.Need(t)
	dir := t.TempDir()
	// 40 s of 720p noise at 42 Mbit/s: about 210 MB.
	data := videotest.FFmpeg(t, dir, "big.mp4", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25", "-t", "40",
		"-vf", "noise=alls=30:allf=t", "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "42M", "-minrate", "42M", "-maxrate", "42M", "-bufsize", "84M")
	if len(data) < 200_000_000 {
		t.Fatalf("test video of %d bytes, want 200 MB", len(data))
	}
	cfg := tokenConfig()
	cfg.Uploads.PartSize = 8 << 20
	e := videoEnv(t, cfg, engine.VideoUploads{})
	token := e.issue(map[string]any{"uploads": 2}).Token
	start := time.Now()
	path := e.createUpload(token, len(data))
	const chunk = 32 << 20
	for off := 0; off < len(data); off += chunk {
		r := e.tusReq(http.MethodPatch, path, token, data[off:min(off+chunk, len(data))], "Upload-Offset", strconv.Itoa(off))
		if off+chunk < len(data) && r.StatusCode != http.StatusNoContent {
			t.Fatalf("PATCH at %d: %d %s", off, r.StatusCode, r.body)
		}
		if off+chunk >= len(data) && (r.StatusCode != http.StatusCreated || r.Header.Get("X-Service-ImageIdentifier") != md5Hex(data)) {
			t.Fatalf("last PATCH: %d %s", r.StatusCode, r.body)
		}
	}
	t.Logf("tus: %d bytes in %v", len(data), time.Since(start))
	r := e.get(e.tokenURL("/users/alice/images?fields[]=mime&fields[]=video&fields[]=size", userPriv))
	entry := r.json(t)["images"].([]any)[0].(map[string]any)
	if v, _ := entry["video"].(map[string]any); entry["mime"] != "video/mp4" || entry["size"] != float64(len(data)) || v["duration"].(float64) < 39 {
		t.Fatalf("listing %v", entry)
	}
	if r := e.get(e.tokenURL("/users/alice/images/"+md5Hex(data)+".jpg?t[]=thumbnail:width=160,height=90", userPriv)); r.StatusCode != 200 ||
		r.Header.Get("X-Service-Source") != "poster" {
		t.Fatalf("poster: %d %s", r.StatusCode, r.body)
	}
	// The same video with its index first (other bytes), by a POST with
	// the token.
	other := videotest.FFmpeg(t, dir, "faststart.mp4", "-i", "big.mp4", "-c", "copy", "-movflags", "+faststart")
	start = time.Now()
	r = e.request(http.MethodPost, e.url+"/users/alice/images", other, "Authorization", "Bearer "+token)
	if r.StatusCode != http.StatusCreated || r.json(t)["imageIdentifier"] != md5Hex(other) {
		t.Fatalf("token POST: %d %s", r.StatusCode, r.body)
	}
	t.Logf("token POST of %d bytes: %d in %v", len(other), r.StatusCode, time.Since(start))
}

// TestVideoTokenPixels: an upload token's maxPixels holds a video to its
// header's width x height, as an image: a 640x360 video is refused by a
// token allowing 200,000 pixels, by POST and by tus, and taken by one
// allowing 230,400.
func TestVideoTokenPixels(t *testing.T) {
	videotest.Need(t)
	data := videotest.H264(t, t.TempDir())
	e := videoEnv(t, tokenConfig(), engine.VideoUploads{})
	small := e.issue(map[string]any{"uploads": 2, "maxPixels": 200_000}).Token
	r := e.request(http.MethodPost, e.url+"/users/alice/images", data, "Authorization", "Bearer "+small)
	if r.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(r.errMessage(t), "640x360 is 230400 pixels; it allows at most 200000") {
		t.Fatalf("POST over the token's pixels: %d %s", r.StatusCode, r.body)
	}
	path := e.createUpload(small, len(data))
	if r := e.tusReq(http.MethodPatch, path, small, data, "Upload-Offset", "0"); r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("tus over the token's pixels: %d %s", r.StatusCode, r.body)
	}
	exact := e.issue(map[string]any{"maxPixels": 640 * 360}).Token
	if r := e.request(http.MethodPost, e.url+"/users/alice/images", data, "Authorization", "Bearer "+exact); r.StatusCode != http.StatusCreated {
		t.Fatalf("POST at the token's pixels: %d %s", r.StatusCode, r.body)
	}
}
