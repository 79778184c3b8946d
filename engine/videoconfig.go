package engine

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// VideoUploads configures video uploads (the `uploads.video*` keys). A
// video is checked from its container's header before any frame is
// decoded, and decoded by Debian's ffmpeg in a subprocess under CPU,
// memory, file and wall-clock limits (videoexec.go).
type VideoUploads struct {
	// Video accepts MP4/MOV (H.264, H.265, AV1) and WebM (VP8, VP9, AV1)
	// uploads (default false). A server with it on needs ffmpeg, ffprobe
	// and prlimit.
	Video bool `yaml:"video"`
	// VideoMaxSeconds caps a video's duration (default 600).
	VideoMaxSeconds float64 `yaml:"videoMaxSeconds"`
	// VideoMaxPixels caps width*height of a video's frames (default
	// 4096x2160).
	VideoMaxPixels int64 `yaml:"videoMaxPixels"`
	// VideoMaxBytes caps a video upload's size (default 512 MiB); api reads
	// a body up to it when video is on.
	VideoMaxBytes int64 `yaml:"videoMaxBytes"`
	// VideoDecodeSeconds is the wall-clock limit of one ffmpeg or ffprobe
	// run (default 30); its CPU time is capped at twice that.
	VideoDecodeSeconds int `yaml:"videoDecodeSeconds"`
	// VideoDecodeMemoryMB caps a run's address space (default 2048).
	VideoDecodeMemoryMB int `yaml:"videoDecodeMemoryMB"`
	// FFmpeg is the ffmpeg binary (default "ffmpeg" on PATH); ffprobe is
	// looked up beside it.
	FFmpeg string `yaml:"ffmpeg"`
}

// The defaults of VideoUploads.
const (
	DefaultVideoMaxSeconds     = 600
	DefaultVideoMaxPixels      = 4096 * 2160
	DefaultVideoMaxBytes       = 512 << 20
	DefaultVideoDecodeSeconds  = 30
	DefaultVideoDecodeMemoryMB = 2048
)

func (v VideoUploads) withDefaults() VideoUploads {
	if v.VideoMaxSeconds == 0 {
		v.VideoMaxSeconds = DefaultVideoMaxSeconds
	}
	if v.VideoMaxPixels == 0 {
		v.VideoMaxPixels = DefaultVideoMaxPixels
	}
	if v.VideoMaxBytes == 0 {
		v.VideoMaxBytes = DefaultVideoMaxBytes
	}
	if v.VideoDecodeSeconds == 0 {
		v.VideoDecodeSeconds = DefaultVideoDecodeSeconds
	}
	if v.VideoDecodeMemoryMB == 0 {
		v.VideoDecodeMemoryMB = DefaultVideoDecodeMemoryMB
	}
	if v.FFmpeg == "" {
		v.FFmpeg = "ffmpeg"
	}
	return v
}

// Validate reports the first limit out of range; zero means the default.
func (v VideoUploads) Validate() error {
	switch {
	case v.VideoMaxSeconds < 0 || v.VideoMaxPixels < 0 || v.VideoMaxBytes < 0:
		return fmt.Errorf("engine: uploads.videoMaxSeconds, videoMaxPixels and videoMaxBytes must not be negative")
	case v.VideoDecodeSeconds < 0 || v.VideoDecodeSeconds > 3600:
		return fmt.Errorf("engine: uploads.videoDecodeSeconds must be between 1 and 3600, got %d", v.VideoDecodeSeconds)
	case v.VideoDecodeMemoryMB < 0 || (v.VideoDecodeMemoryMB > 0 && v.VideoDecodeMemoryMB < 256):
		return fmt.Errorf("engine: uploads.videoDecodeMemoryMB must be at least 256, got %d", v.VideoDecodeMemoryMB)
	}
	return nil
}

// findVideoTools resolves ffmpeg, ffprobe and prlimit when video is on; a
// missing one stops the server from starting with what to install.
func findVideoTools(v VideoUploads) (*videoTools, error) {
	if !v.Video {
		return nil, nil
	}
	t := &videoTools{cfg: v}
	var err error
	if t.ffmpeg, err = exec.LookPath(v.FFmpeg); err != nil {
		return nil, fmt.Errorf("engine: uploads.video is on but ffmpeg (%q) is not found: install Debian's ffmpeg (apt-get install ffmpeg) or set uploads.ffmpeg: %w", v.FFmpeg, err)
	}
	if t.ffprobe, err = exec.LookPath(filepath.Join(filepath.Dir(t.ffmpeg), "ffprobe")); err != nil {
		return nil, fmt.Errorf("engine: uploads.video is on but ffprobe is not found beside %s: install Debian's ffmpeg: %w", t.ffmpeg, err)
	}
	if t.prlimit, err = exec.LookPath("prlimit"); err != nil {
		return nil, fmt.Errorf("engine: uploads.video is on but prlimit is not found: install Debian's util-linux: %w", err)
	}
	return t, nil
}
