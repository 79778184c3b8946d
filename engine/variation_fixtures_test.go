package engine

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The fidelity test's target images: the side-by-side benchmark's two
// sources (made here the way its setup makes them) and real photographs
// from Debian's mate-backgrounds package, plus a real browser screenshot
// from this repository. None are committed: make test-deps installs
// ImageMagick and mate-backgrounds.

// mateNature is where mate-backgrounds keeps its photographs.
const mateNature = "/usr/share/backgrounds/mate/nature"

// benchSourceArgs are ImageMagick's arguments for the benchmark's
// sources: a plasma fractal, blurred, with Gaussian grain laid over it,
// saved as a q90 4:2:0 JPEG (without the per-copy comment segment the
// benchmark adds to make 32 distinct files of it).
func benchSourceArgs(w, h, seed int, out string) []string {
	size := fmt.Sprintf("%dx%d", w, h)
	return []string{"-seed", fmt.Sprint(seed), "-size", size, "plasma:fractal", "-blur", "0x1",
		"(", "-size", size, "xc:gray50", "+noise", "Gaussian", "-colorspace", "gray", ")",
		"-compose", "overlay", "-composite", "-sampling-factor", "4:2:0", "-quality", "90", "-strip", out}
}

// benchSource returns the benchmark's w x h source, made once and kept in
// the user's cache directory (a 4000x3000 plasma takes ImageMagick ~5 s).
func benchSource(t testing.TB, w, h, seed int) []byte {
	t.Helper()
	convert, err := exec.LookPath("convert")
	if err != nil || !isImageMagick(convert) {
		t.Skip("ImageMagick is not installed (make test-deps, or apt-get install imagemagick)")
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, "vitrine-test")
	path := filepath.Join(dir, fmt.Sprintf("bench-%dx%d.jpg", w, h))
	if b, err := os.ReadFile(path); err == nil {
		return b
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp.jpg"
	if out, err := exec.Command(convert, benchSourceArgs(w, h, seed, tmp)...).CombinedOutput(); err != nil {
		t.Fatalf("convert: %v: %s", err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// isImageMagick tells ImageMagick's convert from a stand-in of the same
// name.
func isImageMagick(path string) bool {
	out, err := exec.Command(path, "-version").Output()
	return err == nil && bytes.Contains(out, []byte("ImageMagick"))
}

// photo reads one of mate-backgrounds' photographs.
func photo(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mateNature, name))
	if err != nil {
		t.Skipf("%v: the real photographs come from Debian's mate-backgrounds (make test-deps)", err)
	}
	return b
}

// targetSources are the images held to the fidelity target: the
// benchmark's 1920x1080 and 4000x3000 sources; a camera JPEG (Wood.jpg,
// 2560x1920 from a Konica Minolta DiMAGE Z5, with its EXIF); a
// photograph to be shown in portrait (LadyBird.jpg, 2560x1600, given
// EXIF orientation 6, as a phone held upright writes it); a second
// camera JPEG with fine detail everywhere (Dune.jpg, 1680x1050, Canon
// EOS); and a PNG screenshot with text (the admin UI's search page as
// Chromium rendered it, 1280x900).
func targetSources(t *testing.T) map[string][]byte {
	shot, err := os.ReadFile("../web/screenshots/search.png")
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"bench-1080p.jpg":  benchSource(t, 1920, 1080, 7),
		"bench-12mp.jpg":   benchSource(t, 4000, 3000, 42),
		"camera-wood.jpg":  photo(t, "Wood.jpg"),
		"portrait-bug.jpg": withSegments(t, photo(t, "LadyBird.jpg"), append([]byte{0xFF, 0xE1}, exifAPP1(6)...)),
		"camera-dune.jpg":  photo(t, "Dune.jpg"),
		"screenshot.png":   shot,
	}
}
