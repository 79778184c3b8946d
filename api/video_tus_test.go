package api_test

import (
	"net/http"
	"strconv"
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
