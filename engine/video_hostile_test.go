package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vitrine/vitrine/engine/videotest"
)

// TestVideoReadsNothingElse: playlists and concat lists naming a canary
// file, and an MP4 whose mdat claims 10 GB, are answered (refused or
// decoded, never a 5xx) without the canary being opened, as inotify sees
// it.
func TestVideoReadsNothingElse(t *testing.T) {
	videotest.Need(t)
	dir := t.TempDir()
	h264 := videotest.H264(t, dir)
	canary := filepath.Join(t.TempDir(), "canary.ts")
	if err := os.WriteFile(canary, h264, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer syscall.Close(fd)
	if _, err := syscall.InotifyAddWatch(fd, canary, syscall.IN_OPEN|syscall.IN_ACCESS); err != nil {
		t.Fatal(err)
	}
	opened := func() bool {
		buf := make([]byte, 4096)
		n, _ := syscall.Read(fd, buf)
		return n > 0
	}
	// The watch sees an open: this test can fail.
	if f, err := os.Open(canary); err == nil {
		f.Close()
	}
	if !opened() {
		t.Fatal("inotify saw no open of the canary")
	}
	at := bytes.Index(h264, []byte("mdat"))
	if at < 4 {
		t.Fatal("no mdat box in the test video")
	}
	huge := append(bytes.Clone(h264[:at-4]), 0, 0, 0, 1, 'm', 'd', 'a', 't')
	huge = binary.BigEndian.AppendUint64(huge, 10<<30)
	huge = append(huge, h264[at+4:]...)
	ftyp := []byte("\x00\x00\x00\x14ftypisom\x00\x00\x02\x00isom")
	e := videoEngine(t, VideoUploads{})
	for name, data := range map[string][]byte{
		"HLS playlist":      []byte("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nfile:" + canary + "\n#EXTINF:4,\n" + canary + "\n#EXT-X-ENDLIST\n"),
		"ftyp then HLS":     append(bytes.Clone(ftyp), "#EXTM3U\n#EXTINF:4,\nfile:"+canary+"\n"...),
		"concat list":       []byte("ffconcat version 1.0\nfile '" + canary + "'\n"),
		"ftyp then concat":  append(bytes.Clone(ftyp), "ffconcat version 1.0\nfile 'file:"+canary+"'\n"...),
		"10 GB mdat claim":  huge,
		"10 GB mdat, short": huge[:len(huge)/2],
	} {
		_, _, err := e.InspectVideo(context.Background(), data)
		var ee *Error
		if err != nil && (!errors.As(err, &ee) || ee.HTTPStatus() >= 500) {
			t.Errorf("%s: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
		if opened() {
			t.Errorf("%s: the canary was opened", name)
		}
	}
}

// TestVideoDecoderKilled: a decoder killed in the middle of a run is a
// 415 naming the signal, and the next video decodes.
func TestVideoDecoderKilled(t *testing.T) {
	videotest.Need(t)
	e := videoEngine(t, VideoUploads{})
	dir := t.TempDir()
	done := make(chan error, 1)
	go func() {
		_, err := e.video.run(context.Background(), dir, "ffmpeg", []string{"-re", "-f", "lavfi", "-i", "testsrc=rate=25", "-f", "null", "-"}, 1<<10)
		done <- err
	}()
	pid := 0
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		pid = processIn(dir)
	}
	if pid == 0 {
		t.Fatal("no decoder process found working in the run's folder")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var ee *Error
	if !errors.As(err, &ee) || ee.HTTPStatus() != 415 || !strings.Contains(ee.PublicMessage(), "killed") {
		t.Fatalf("killed decoder: %v", err)
	}
	if _, _, err := e.InspectVideo(context.Background(), videotest.H264(t, t.TempDir())); err != nil {
		t.Fatalf("after the kill: %v", err)
	}
}

// processIn is the pid of a process whose working folder is dir, or 0.
func processIn(dir string) int {
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", ent.Name(), "cwd")); err == nil && cwd == dir {
			return pid
		}
	}
	return 0
}

// TestVideoHugeDimensions: 100 KB of H.264 whose header says
// 8192x4320 is refused as too large (413 naming uploads.videoMaxPixels)
// from the header, and a WebM whose track header claims 65535x65535 over
// 320x256 frames is taken at the size its frames have, or refused, never
// a 5xx.
func TestVideoHugeDimensions(t *testing.T) {
	videotest.Need(t)
	dir := t.TempDir()
	bomb := videotest.FFmpeg(t, dir, "bomb.mp4", "-f", "lavfi", "-i", "color=black:size=8192x4320:rate=25", "-t", "1",
		"-c:v", "libx264", "-preset", "ultrafast", "-f", "mp4")
	small := videotest.FFmpeg(t, dir, "small.webm", "-f", "lavfi", "-i", "testsrc=size=320x256:rate=25", "-t", "1",
		"-c:v", "libvpx-vp9", "-b:v", "100k", "-f", "webm")
	liar := bytes.Clone(small)
	for _, el := range []string{"\xb0\x82\x01\x40", "\xba\x82\x01\x00"} { // PixelWidth 320, PixelHeight 256
		i := bytes.Index(liar, []byte(el))
		if i < 0 {
			t.Fatalf("no %x element in the WebM", el)
		}
		liar[i+2], liar[i+3] = 0xff, 0xff
	}
	e := videoEngine(t, VideoUploads{})
	_, _, err := e.InspectVideo(context.Background(), bomb)
	var ee *Error
	if !errors.As(err, &ee) || ee.HTTPStatus() != 413 || !strings.Contains(ee.PublicMessage(), "uploads.videoMaxPixels") {
		t.Fatalf("%d bytes of 8192x4320 H.264: %v; want 413 naming uploads.videoMaxPixels", len(bomb), err)
	}
	t.Logf("%d bytes of 8192x4320 H.264: %v", len(bomb), err)
	info, _, err := e.InspectVideo(context.Background(), liar)
	switch {
	case err == nil && (info.Width != 320 || info.Height != 256):
		t.Fatalf("WebM claiming 65535x65535: taken as %dx%d; want its frames' 320x256", info.Width, info.Height)
	case err != nil && (!errors.As(err, &ee) || ee.HTTPStatus() >= 500):
		t.Fatalf("WebM claiming 65535x65535: %v", err)
	}
	t.Logf("WebM claiming 65535x65535: %dx%d, %v", info.Width, info.Height, err)
}
