// Package videotest makes the videos of the video tests with Debian's
// ffmpeg: 4 s at 25 fps, 640x360, a one-second fade from black, a pan
// across a photograph (motion) and a sine tone (audio).
package videotest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Photo is the photograph the videos pan across (mate-backgrounds).
const Photo = "/usr/share/backgrounds/mate/nature/Garden.jpg"

// Need skips t without ffmpeg, ffprobe, prlimit or the photograph, naming
// what installs them.
func Need(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"ffmpeg", "ffprobe", "prlimit"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is missing: make test-deps installs Debian's ffmpeg", tool)
		}
	}
	if _, err := os.Stat(Photo); err != nil {
		t.Skip("mate-backgrounds is missing: make test-deps installs it")
	}
}

// FFmpeg runs ffmpeg with args in dir, writing name, and returns its bytes.
func FFmpeg(t testing.TB, dir, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("ffmpeg", append(append([]string{"-hide_banner", "-loglevel", "error", "-y"}, args...), filepath.Join(dir, name))...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", name, err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// PanFade is the picture of every test video: the photograph's pan, after
// a fade from black over the first second.
const PanFade = "scale=1280:720,crop=640:360:x='t*120':y=180,fade=in:st=0:d=1,format=yuv420p"

// Video encodes the 4-second test video into dir/name with the given codec
// arguments (video and audio).
func Video(t testing.TB, dir, name string, codec ...string) []byte {
	t.Helper()
	args := []string{"-loop", "1", "-framerate", "25", "-i", Photo, "-f", "lavfi", "-i", "sine=frequency=440:duration=4",
		"-vf", PanFade, "-t", "4", "-r", "25", "-g", "25"}
	return FFmpeg(t, dir, name, append(append(args, codec...), "-shortest")...)
}

// H264 is the test video as H.264 and AAC in MP4.
func H264(t testing.TB, dir string) []byte {
	return Video(t, dir, "h264.mp4", "-c:v", "libx264", "-preset", "veryfast", "-c:a", "aac")
}

// Keyframes lists the times of the keyframes of dir/name, by ffprobe.
func Keyframes(t testing.TB, dir, name string) []float64 {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-skip_frame", "nokey", "-select_streams", "v:0",
		"-show_entries", "frame=pts_time", "-of", "csv=p=0", filepath.Join(dir, name)).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", name, err)
	}
	var ts []float64
	for _, f := range strings.FieldsFunc(string(out), func(r rune) bool { return r == '\n' || r == ',' }) {
		if v, err := strconv.ParseFloat(strings.TrimSpace(f), 64); err == nil {
			ts = append(ts, v)
		}
	}
	return ts
}
