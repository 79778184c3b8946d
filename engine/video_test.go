package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/davidbyttow/govips/v2/vips"
	"github.com/vitrine/vitrine/engine/videotest"
)

func videoEngine(t testing.TB, v VideoUploads) *Engine {
	t.Helper()
	v.Video = true
	return newTestEngine(t, Config{Uploads: Uploads{VideoUploads: v}})
}

func meanOf(t testing.TB, img []byte) float64 {
	t.Helper()
	ref, err := vips.NewImageFromBuffer(img)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	m, err := ref.Average()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestVideoInspectAndPoster(t *testing.T) {
	videotest.Need(t)
	dir := t.TempDir()
	h264 := videotest.H264(t, dir)
	cases := []struct {
		name, mime, codec string
		data              []byte
		w, h              int
	}{
		{"h264 mp4", "video/mp4", "h264", h264, 640, 360},
		{"vp9 webm", "video/webm", "vp9", videotest.Video(t, dir, "vp9.webm", "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-c:a", "libopus"), 640, 360},
		{"av1 mp4", "video/mp4", "av1", videotest.Video(t, dir, "av1.mp4", "-c:v", "libsvtav1", "-preset", "12", "-c:a", "aac"), 640, 360},
		{"rotated mov", "video/quicktime", "h264", rotatedMOV(t, dir), 360, 640},
	}
	e := videoEngine(t, VideoUploads{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info, poster, err := e.InspectVideo(context.Background(), c.data)
			if err != nil {
				t.Fatal(err)
			}
			v := info.Video
			if info.Mime != c.mime || info.Width != c.w || info.Height != c.h || v == nil || v.Codec != c.codec ||
				v.Duration < 3.9 || v.Duration > 4.1 || v.FPS != 25 {
				t.Fatalf("info %+v %+v", info, v)
			}
			p, err := vips.NewImageFromBuffer(poster)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.Width() != c.w || p.Height() != c.h || p.Format() != vips.ImageTypeJPEG {
				t.Fatalf("poster %dx%d %v", p.Width(), p.Height(), p.Format())
			}
			// The first frame is black (the fade); the poster is a picture.
			if m := meanOf(t, poster); m < 40 {
				t.Fatalf("poster mean %.1f: a frame of the fade", m)
			}
			if got, err := e.Inspect(context.Background(), c.data); err != nil || got.Video == nil {
				t.Fatalf("Inspect: %+v %v", got, err)
			}
		})
	}
	off := newTestEngine(t, Config{})
	if _, err := off.Inspect(context.Background(), h264); KindOf(err) != KindUnsupported || !strings.Contains(err.Error(), "uploads.video is off") {
		t.Fatalf("video off: %v", err)
	}
}

// rotatedMOV is a portrait phone video: landscape frames with a display
// rotation of 90 degrees, stream-copied into a QuickTime file.
func rotatedMOV(t testing.TB, dir string) []byte {
	t.Helper()
	videotest.H264(t, dir)
	return videotest.FFmpeg(t, dir, "rotated.mov", "-i", "h264.mp4", "-c", "copy", "-metadata:s:v:0", "rotate=90", "-f", "mov")
}

func TestVideoLimits(t *testing.T) {
	videotest.Need(t)
	dir := t.TempDir()
	h264 := videotest.H264(t, dir)
	for _, c := range []struct {
		name string
		cfg  VideoUploads
		want string
	}{
		{"pixels", VideoUploads{VideoMaxPixels: 320 * 180}, "uploads.videoMaxPixels"},
		{"seconds", VideoUploads{VideoMaxSeconds: 2}, "uploads.videoMaxSeconds"},
		{"bytes", VideoUploads{VideoMaxBytes: 1000}, "uploads.videoMaxBytes"},
	} {
		e := videoEngine(t, c.cfg)
		_, _, err := e.InspectVideo(context.Background(), h264)
		var ee *Error
		if !errors.As(err, &ee) || ee.HTTPStatus() != 413 || !strings.Contains(ee.PublicMessage(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestVideoHostile feeds the decoder what attacks it: each is refused with
// a 4xx naming what is wrong, nothing is fetched or read beside the video,
// and the server goes on.
func TestVideoHostile(t *testing.T) {
	videotest.Need(t)
	dir := t.TempDir()
	h264 := videotest.H264(t, dir)
	// A listener on loopback stands for the network a playlist names: it
	// must see no connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var dialed sync.WaitGroup
	connected := make(chan struct{}, 1)
	dialed.Add(1)
	go func() {
		defer dialed.Done()
		if c, err := ln.Accept(); err == nil {
			connected <- struct{}{}
			c.Close()
		}
	}()
	url := "http://" + ln.Addr().String() + "/x.ts"
	ftyp := []byte("\x00\x00\x00\x14ftypisom\x00\x00\x02\x00isom")
	// A 1-second clip retimed to 100,000 fps: 100 frames in a millisecond.
	raw := videotest.FFmpeg(t, dir, "raw.h264", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-t", "4", "-c:v", "libx264", "-preset", "ultrafast")
	_ = raw
	fast := videotest.FFmpeg(t, dir, "fast.mp4", "-r", "100000", "-i", "raw.h264", "-c", "copy")
	corrupt := bytes.Clone(h264)
	for i := len(corrupt) / 3; i < len(corrupt)*2/3; i += 7 {
		corrupt[i] ^= 0x5a
	}
	cases := []struct {
		name   string
		data   []byte
		status int
	}{
		{"truncated", h264[:len(h264)/2], 415},
		{"header only", h264[:64], 415},
		{"100,000 fps", fast, 415},
		{"HLS playlist", []byte("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n" + url + "\n#EXTINF:1,\nfile:/etc/passwd\n"), 415},
		{"ftyp then playlist", append(bytes.Clone(ftyp), "#EXTM3U\n#EXTINF:1,\n"+url+"\n"...), 415},
		{"ftyp then concat", append(bytes.Clone(ftyp), "ffconcat version 1.0\nfile '/etc/passwd'\nfile '"+url+"'\n"...), 415},
		{"matroska", []byte("\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\xf7\x81\x01\x42\xf2\x81\x04\x42\xf3\x81\x08\x42\x82\x88matroska"), 415},
	}
	e := videoEngine(t, VideoUploads{})
	for _, c := range cases {
		_, _, err := e.InspectVideo(context.Background(), c.data)
		var ee *Error
		if !errors.As(err, &ee) || ee.HTTPStatus() != c.status || ee.PublicMessage() == "" {
			t.Errorf("%s: want %d, got %v", c.name, c.status, err)
		} else {
			t.Logf("%s: %d %s", c.name, ee.HTTPStatus(), ee.PublicMessage())
		}
	}
	// Corrupt frames: ffmpeg may decode around them; it must answer either
	// way, and never with a 5xx.
	if _, _, err := e.InspectVideo(context.Background(), corrupt); err != nil {
		var ee *Error
		if !errors.As(err, &ee) || ee.HTTPStatus() >= 500 {
			t.Errorf("corrupt: %v", err)
		}
	}
	select {
	case <-connected:
		t.Fatal("a playlist's URL was fetched")
	case <-time.After(100 * time.Millisecond):
	}
	// The server goes on: a good video still passes.
	if _, _, err := e.InspectVideo(context.Background(), h264); err != nil {
		t.Fatal(err)
	}
	ln.Close()
	dialed.Wait()
}

// TestVideoRunLimits holds the subprocess limits: a run past
// uploads.videoDecodeSeconds is killed with its process group and
// answered 413, a run past its output cap 413, and a cancelled request
// ends its run.
func TestVideoRunLimits(t *testing.T) {
	videotest.Need(t)
	e := videoEngine(t, VideoUploads{VideoDecodeSeconds: 1})
	dir := t.TempDir()
	endless := []string{"-re", "-f", "lavfi", "-i", "testsrc=rate=25", "-f", "null", "-"}
	start := time.Now()
	_, err := e.video.run(context.Background(), dir, "ffmpeg", endless, 1<<10)
	var ee *Error
	if !errors.As(err, &ee) || ee.HTTPStatus() != 413 || !strings.Contains(ee.PublicMessage(), "uploads.videoDecodeSeconds") {
		t.Fatalf("timeout: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the run went on for %v", d)
	}
	_, err = e.video.run(context.Background(), dir, "ffmpeg", []string{"-f", "lavfi", "-i", "testsrc", "-frames:v", "50", "-f", "rawvideo", "pipe:1"}, 1<<10)
	if !errors.As(err, &ee) || ee.HTTPStatus() != 413 || !strings.Contains(ee.PublicMessage(), "output too large") {
		t.Fatalf("output cap: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	if _, err = e.video.run(ctx, dir, "ffmpeg", endless, 1<<10); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
	// The runs wrote nothing: --fsize=0 lets no file be made.
	_, err = e.video.run(context.Background(), dir, "ffmpeg", []string{"-f", "lavfi", "-i", "testsrc", "-frames:v", "1", "out.png"}, 1<<10)
	if _, serr := os.Stat(filepath.Join(dir, "out.png")); err == nil && serr == nil {
		if fi, _ := os.Stat(filepath.Join(dir, "out.png")); fi.Size() > 0 {
			t.Fatal("a run wrote a file")
		}
	}
}

// TestVideoFrame: frame:time with exact=1 is the frame ffmpeg itself
// extracts at that time (and not its neighbour a second away); the
// keyframe default decodes the keyframe at or before it; the rest of the
// chain runs on the frame; a frame step on a still image, or not first, is
// refused.
func TestVideoFrame(t *testing.T) {
	videotest.Need(t)
	dir := t.TempDir()
	h264 := videotest.H264(t, dir)
	e := videoEngine(t, VideoUploads{})
	info, _, err := e.InspectVideo(context.Background(), h264)
	if err != nil {
		t.Fatal(err)
	}
	render := func(specs ...string) *Result {
		t.Helper()
		c, err := e.ParseChain(specs)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.ProcessVideo(context.Background(), openBytes(h264),
			Request{Chain: c, Format: "png", Source: info})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ref := videotest.FFmpeg(t, dir, "ref.png", "-ss", "2.5", "-i", "h264.mp4", "-frames:v", "1")
	got := render("frame:time=2.5,exact=1")
	if d := meanDiff(t, got.Data, ref); d > 1.5 {
		t.Fatalf("frame at 2.5 s differs from ffmpeg's by %.2f", d)
	}
	if got.Headers["Frame-Time"] != "2.500" {
		t.Fatalf("Frame-Time %q", got.Headers["Frame-Time"])
	}
	if d := meanDiff(t, render("frame:time=1.5,exact=1").Data, ref); d < 5 {
		t.Fatalf("the frame a second earlier is %.2f from it: the comparison cannot tell frames apart", d)
	}
	// Keyframe seeking decodes the last keyframe at or before 2.5 s.
	kf := 0.0
	for _, k := range videotest.Keyframes(t, dir, "h264.mp4") {
		if k <= 2.5 {
			kf = k
		}
	}
	key := videotest.FFmpeg(t, dir, "key.png", "-ss", strconv.FormatFloat(kf, 'f', 3, 64), "-i", "h264.mp4", "-frames:v", "1")
	if d := meanDiff(t, render("frame:time=2.5").Data, key); d > 1.5 {
		t.Fatalf("keyframe seek differs from the keyframe at 2 s by %.2f", d)
	}
	if d := meanDiff(t, render("frame:at=0.625,exact=1").Data, ref); d > 1.5 {
		t.Fatalf("frame at 0.625 of 4 s differs by %.2f", d)
	}
	small := render("frame:at=0.5", "thumbnail:width=160,height=90")
	if small.Width != 160 || small.Height != 90 || small.Mime != "image/png" {
		t.Fatalf("frame then thumbnail: %dx%d %s", small.Width, small.Height, small.Mime)
	}
	// A reducing chain gets the frame shrunk by ffmpeg (as a JPEG shrinks
	// on load) and a crop the full frame: both look as the chain on
	// ffmpeg's full frame does (a shrunk frame is resampled twice, so
	// within 2.5 rather than 1.5; the frame a second away is 5 or more).
	for _, c := range []struct {
		rest []string
		tol  float64
	}{{[]string{"resize:width=200"}, 2.5}, {[]string{"maxSize:width=150,height=150"}, 2.5}, {[]string{"crop:width=120,height=80,x=300,y=200"}, 0.5}} {
		chain, err := e.ParseChain(c.rest)
		if err != nil {
			t.Fatal(err)
		}
		want, err := e.Process(context.Background(), ref, Request{Chain: chain, Format: "png"})
		if err != nil {
			t.Fatal(err)
		}
		if d := meanDiff(t, render(append([]string{"frame:time=2.5,exact=1"}, c.rest...)...).Data, want.Data); d > c.tol {
			t.Errorf("frame then %v differs from ffmpeg's frame then the same by %.2f", c.rest, d)
		}
	}
	if _, err := e.ParseChain([]string{"resize:width=10", "frame:time=1"}); KindOf(err) != KindInvalid {
		t.Fatalf("frame not first: %v", err)
	}
	c, _ := e.ParseChain([]string{"frame:time=1"})
	if _, err := e.Process(context.Background(), source(t, 64, 48, "png", false), Request{Chain: c, Format: "png"}); KindOf(err) != KindInvalid {
		t.Fatalf("frame on an image: %v", err)
	}
}

// meanDiff is the mean absolute difference of two images' pixels.
func meanDiff(t testing.TB, a, b []byte) float64 {
	t.Helper()
	ra, err := vips.NewImageFromBuffer(a)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := vips.NewImageFromBuffer(b)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	if ra.Width() != rb.Width() || ra.Height() != rb.Height() {
		t.Fatalf("sizes %dx%d and %dx%d", ra.Width(), ra.Height(), rb.Width(), rb.Height())
	}
	for _, r := range []*vips.ImageRef{ra, rb} {
		if err := r.ExtractBand(0, 3); err != nil {
			t.Fatal(err)
		}
	}
	if err := ra.Subtract(rb); err != nil {
		t.Fatal(err)
	}
	if err := ra.Abs(); err != nil {
		t.Fatal(err)
	}
	m, err := ra.Average()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestVideoSpritePreview: a sprite's tiles are the frames at i*interval
// (tile 7 of a 4x2 sprite of 4 s is the frame at 3.5 s, scaled as ffmpeg
// scales it), SpriteOf describes them; a preview is an animation of
// duration*fps frames, as WebP by default or GIF, through the rest of the
// chain.
func TestVideoSpritePreview(t *testing.T) {
	videotest.Need(t)
	dir := t.TempDir()
	h264 := videotest.H264(t, dir)
	e := videoEngine(t, VideoUploads{})
	info, _, err := e.InspectVideo(context.Background(), h264)
	if err != nil {
		t.Fatal(err)
	}
	process := func(format string, specs ...string) (*Result, Chain) {
		t.Helper()
		c, err := e.ParseChain(specs)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.ProcessVideo(context.Background(), openBytes(h264),
			Request{Chain: c, Format: format, Source: info})
		if err != nil {
			t.Fatal(err)
		}
		return res, c
	}
	res, c := process("png", "sprite:columns=4,rows=2,width=160")
	sp, ok := c.SpriteOf(info)
	if !ok || sp.Tiles != 8 || sp.Width != 160 || sp.Height != 90 || sp.Interval != 0.5 {
		t.Fatalf("SpriteOf %+v %v", sp, ok)
	}
	if res.Width != 640 || res.Height != 180 || res.Headers["Sprite-Interval"] != "0.500" {
		t.Fatalf("sprite %dx%d %v", res.Width, res.Height, res.Headers)
	}
	ref := videotest.FFmpeg(t, dir, "tile7.png", "-ss", "3.5", "-i", "h264.mp4", "-vf", "scale=160:90:flags=lanczos", "-frames:v", "1")
	tile := mustLoad(t, res.Data)
	defer tile.Close()
	if err := tile.ExtractArea(3*160, 90, 160, 90); err != nil {
		t.Fatal(err)
	}
	png, _, err := tile.ExportPng(vips.NewPngExportParams())
	if err != nil {
		t.Fatal(err)
	}
	if d := meanDiff(t, png, ref); d > 2 {
		t.Fatalf("tile 7 differs from ffmpeg's frame at 3.5 s by %.2f", d)
	}
	if _, err := e.ParseChain([]string{"sprite:columns=20,rows=20"}); KindOf(err) != KindInvalid {
		t.Fatalf("400 tiles: %v", err)
	}
	anim, _ := process("", "preview:start=1,duration=2,fps=5,width=320")
	a := mustLoad(t, anim.Data)
	defer a.Close()
	if anim.Mime != "image/webp" || a.Pages() != 10 || a.Width() != 320 {
		t.Fatalf("preview %s: %d frames, %d wide", anim.Mime, a.Pages(), a.Width())
	}
	gif, _ := process("gif", "preview:duration=1,fps=4,width=160", "resize:width=80")
	if g := mustLoad(t, gif.Data); gif.Mime != "image/gif" || g.Pages() != 4 || g.Width() != 80 {
		t.Fatalf("gif preview %s: %d frames, %d wide", gif.Mime, g.Pages(), g.Width())
	}
}

// openBytes is ProcessVideo's open for a video held in memory.
func openBytes(data []byte) func(context.Context) (io.ReadCloser, error) {
	return func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
}

// failingReader returns the first n bytes of data, then err.
type failingReader struct {
	data []byte
	n    int
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, r.err
	}
	k := copy(p, r.data[:min(len(p), r.n)])
	r.data, r.n = r.data[k:], r.n-k
	return k, nil
}

// TestVideoReadFails: a video whose stream from the store breaks half-way
// fails the render with the store's error, closes the stream and leaves no
// temporary copy behind.
func TestVideoReadFails(t *testing.T) {
	videotest.Need(t)
	h264 := videotest.H264(t, t.TempDir())
	e := videoEngine(t, VideoUploads{})
	info, _, err := e.InspectVideo(context.Background(), h264)
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.ParseChain([]string{"frame:time=1"})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	broken := errors.New("store went away")
	closed := false
	open := func(context.Context) (io.ReadCloser, error) {
		r := &failingReader{data: h264, n: len(h264) / 2, err: broken}
		return struct {
			io.Reader
			io.Closer
		}{r, closer(func() error { closed = true; return nil })}, nil
	}
	if _, err := e.ProcessVideo(context.Background(), open, Request{Chain: c, Source: info}); !errors.Is(err, broken) {
		t.Fatalf("err = %v, want the store's error", err)
	}
	if !closed {
		t.Error("the stream was not closed")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

type closer func() error

func (c closer) Close() error { return c() }
