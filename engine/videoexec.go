package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// videoTools runs ffmpeg and ffprobe, each run isolated: media parsers are
// a classic attack surface, so a run
//   - reads only a private copy of the video (0600, in a folder of its
//     own) and, through -protocol_whitelist file and a named demuxer, never
//     a playlist, a concat list or the network;
//   - runs under prlimit: CPU time (twice the wall-clock limit), address
//     space (uploads.videoDecodeMemoryMB), no file written (--fsize=0),
//     no core dump, 64 descriptors;
//   - gets a minimal environment and a process group of its own, killed
//     when the request ends or the wall-clock limit passes;
//   - writes at most maxOut bytes to stdout and 4 KB of stderr (to the log).
type videoTools struct {
	cfg                      VideoUploads
	ffmpeg, ffprobe, prlimit string
}

// errDecodeTimeout is the cause of a run cut at uploads.videoDecodeSeconds.
var errDecodeTimeout = errors.New("video decode timeout")

// errOutputCap is a run whose stdout went past its cap.
var errOutputCap = errors.New("video output over its cap")

const videoStderrCap = 4 << 10

// cappedBuffer keeps at most limit bytes and reports writes past it. The
// buffer is a field, not embedded: an embedded bytes.Buffer's ReadFrom
// would let io.Copy past Write and its cap.
type cappedBuffer struct {
	buf   bytes.Buffer
	limit int
	over  bool
	// quiet drops what is past the cap without an error (stderr, which
	// only goes to the log).
	quiet bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		if b.quiet {
			return len(p), nil
		}
		return 0, errOutputCap
	}
	return b.buf.Write(p)
}

// run runs tool ("ffmpeg" or "ffprobe") with args, in dir, and returns its
// stdout (at most maxOut bytes).
func (t *videoTools) run(ctx context.Context, dir, tool string, args []string, maxOut int) ([]byte, error) {
	bin := t.ffmpeg
	if tool == "ffprobe" {
		bin = t.ffprobe
	}
	wall := time.Duration(t.cfg.VideoDecodeSeconds) * time.Second
	ctx, cancel := context.WithTimeoutCause(ctx, wall, errDecodeTimeout)
	defer cancel()
	limits := []string{
		"--cpu=" + strconv.Itoa(2*t.cfg.VideoDecodeSeconds),
		"--as=" + strconv.FormatInt(int64(t.cfg.VideoDecodeMemoryMB)<<20, 10),
		"--fsize=0", "--core=0", "--nofile=64", "--",
		bin, "-hide_banner", "-loglevel", "error",
	}
	if tool == "ffmpeg" {
		limits = append(limits, "-nostdin", "-threads", "2")
	}
	cmd := exec.CommandContext(ctx, t.prlimit, append(limits, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out := &cappedBuffer{limit: maxOut}
	stderr := &cappedBuffer{limit: videoStderrCap, quiet: true}
	cmd.Stdout, cmd.Stderr = out, stderr
	err := cmd.Run()
	switch {
	case err == nil:
		return out.buf.Bytes(), nil
	case out.over:
		return nil, &Error{Kind: KindTooLarge, Msg: "Video output too large", Err: errOutputCap}
	case context.Cause(ctx) == errDecodeTimeout:
		return nil, &Error{Kind: KindTooLarge, Msg: fmt.Sprintf("Video took too long to decode: over %ds (uploads.videoDecodeSeconds)", t.cfg.VideoDecodeSeconds), Err: errDecodeTimeout}
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return nil, &Error{Kind: KindInvalidMedia, Msg: "Invalid video: the decoder stopped on it (" + ws.Signal().String() + ")",
				Err: fmt.Errorf("%s: %w: %s", tool, err, stderr.buf.String())}
		}
		return nil, &Error{Kind: KindInvalidMedia, Msg: "Invalid video: it cannot be decoded", Err: fmt.Errorf("%s: %w: %s", tool, err, stderr.buf.String())}
	}
	return nil, fmt.Errorf("engine: run %s: %w", tool, err)
}

// videoFile is a private copy of a video for ffmpeg runs.
type videoFile struct {
	dir string
}

// input is the copy's name inside dir, as ffmpeg reads it.
const videoInputName = "input"

// writeVideoFile copies r into a 0600 file in a new 0700 folder.
func writeVideoFile(r io.Reader) (*videoFile, error) {
	dir, err := os.MkdirTemp("", "vitrine-video-")
	if err != nil {
		return nil, fmt.Errorf("engine: video temp: %w", err)
	}
	vf := &videoFile{dir: dir}
	f, err := os.OpenFile(filepath.Join(dir, videoInputName), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		vf.remove()
		return nil, fmt.Errorf("engine: video temp: %w", err)
	}
	return vf, nil
}

func (vf *videoFile) remove() { os.RemoveAll(vf.dir) }
