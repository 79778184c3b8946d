package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// VideoInfo is what a video upload's header says, checked against
// uploads.videoMax*.
type VideoInfo struct {
	// Duration is in seconds, FPS the average frame rate.
	Duration float64
	FPS      float64
	// Codec is ffmpeg's name of the video stream's codec: h264, hevc,
	// av1, vp8 or vp9.
	Codec string
}

// VideoTypes are the video types uploads.video takes, by extension.
var VideoTypes = map[string]string{"mp4": "video/mp4", "mov": "video/quicktime", "webm": "video/webm"}

// videoCodecs are the codecs each container is taken with, and the
// decoder each is decoded by (named, so a file's claims never pick one).
var videoCodecs = map[string]map[string]string{
	"mp4":  {"h264": "h264", "hevc": "hevc", "av1": "libdav1d"},
	"mov":  {"h264": "h264", "hevc": "hevc", "av1": "libdav1d"},
	"webm": {"vp8": "vp8", "vp9": "vp9", "av1": "libdav1d"},
}

// maxVideoFPS bounds the frame rate a header may claim.
const maxVideoFPS = 240

// sniffVideo identifies MP4/MOV (an ISO BMFF ftyp that is not an AVIF or
// HEIC image) and WebM (an EBML header whose doctype is webm). Matroska
// that is not WebM is reported with ok and an error.
func sniffVideo(data []byte) (format, bool, error) {
	if len(data) >= 12 && string(data[4:8]) == "ftyp" {
		if _, image := sniffHEIF(data); image {
			return format{}, false, nil
		}
		if string(data[8:12]) == "qt  " {
			return format{VideoTypes["mov"], "mov"}, true, nil
		}
		return format{VideoTypes["mp4"], "mp4"}, true, nil
	}
	if bytes.HasPrefix(data, []byte{0x1A, 0x45, 0xDF, 0xA3}) {
		head := data[:min(len(data), 64)]
		switch {
		case bytes.Contains(head, []byte("webm")):
			return format{VideoTypes["webm"], "webm"}, true, nil
		case bytes.Contains(head, []byte("matroska")):
			return format{}, true, &Error{Kind: KindUnsupported, Msg: "Unsupported video type: video/x-matroska; remux it to WebM or MP4 (ffmpeg -i in.mkv -c copy out.mp4)"}
		}
	}
	return format{}, false, nil
}

// VideoType returns the extension of a video container vitrine takes
// (mp4, mov, webm) when data starts like one, whether or not uploads.video
// is on.
func VideoType(data []byte) (string, bool) {
	f, ok, _ := sniffVideo(data)
	return f.ext, ok
}

// videoIn is the input half of every ffmpeg command: the named demuxer
// and decoder, the file protocol only, the first video stream only.
func videoIn(f format, codec string, pre ...string) []string {
	demuxer := "mov"
	if f.ext == "webm" {
		demuxer = "matroska"
	}
	args := append([]string{"-protocol_whitelist", "file", "-f", demuxer, "-c:v", videoCodecs[f.ext][codec]}, pre...)
	return append(args, "-i", "file:"+videoInputName, "-map", "0:v:0", "-an", "-sn", "-dn")
}

// probed is the part of ffprobe's JSON probeVideo reads.
type probed struct {
	Streams []struct {
		CodecName    string `json:"codec_name"`
		Width        int    `json:"width"`
		Height       int    `json:"height"`
		AvgFrameRate string `json:"avg_frame_rate"`
		RFrameRate   string `json:"r_frame_rate"`
		NbFrames     string `json:"nb_frames"`
		Duration     string `json:"duration"`
		Tags         struct {
			Rotate string `json:"rotate"`
		} `json:"tags"`
		SideData []struct {
			Rotation float64 `json:"rotation"`
		} `json:"side_data_list"`
	} `json:"streams"`
	Format struct {
		Duration string `json:"duration"`
	} `json:"format"`
}

func invalidVideo(msg string, args ...any) error {
	return &Error{Kind: KindInvalidMedia, Msg: "Invalid video: " + fmt.Sprintf(msg, args...)}
}

// probeVideo reads the first video stream's header with ffprobe and
// refuses, before any frame is decoded, a codec the container does not
// take, a video over the limits, an absurd frame rate or frame count, or
// no duration.
func (e *Engine) probeVideo(ctx context.Context, vf *videoFile, f format) (Info, error) {
	demuxer := "mov"
	if f.ext == "webm" {
		demuxer = "matroska"
	}
	out, err := e.video.run(ctx, vf.dir, "ffprobe", []string{"-protocol_whitelist", "file", "-f", demuxer,
		"-select_streams", "v:0", "-show_streams", "-show_format", "-of", "json", "file:" + videoInputName}, 1<<20)
	if err != nil {
		return Info{}, err
	}
	var p probed
	if err := json.Unmarshal(out, &p); err != nil {
		return Info{}, &Error{Kind: KindInvalidMedia, Msg: "Invalid video: its header cannot be read", Err: err}
	}
	if len(p.Streams) == 0 {
		return Info{}, invalidVideo("it has no video stream")
	}
	st := p.Streams[0]
	if _, ok := videoCodecs[f.ext][st.CodecName]; !ok {
		return Info{}, &Error{Kind: KindUnsupported, Msg: fmt.Sprintf("Unsupported video codec %q in %s; %s takes %s", st.CodecName, f.mime, f.ext, codecList(f.ext))}
	}
	w, h := st.Width, st.Height
	if rotated(st.Tags.Rotate, st.SideData) {
		w, h = h, w
	}
	dur := parseSeconds(st.Duration)
	if fd := parseSeconds(p.Format.Duration); dur <= 0 || (fd > 0 && fd < dur) {
		dur = fd
	}
	fps := parseRate(st.AvgFrameRate)
	if fps <= 0 {
		fps = parseRate(st.RFrameRate)
	}
	if err := e.checkVideo(w, h, dur, fps, st.NbFrames); err != nil {
		return Info{}, err
	}
	return Info{Mime: f.mime, Ext: f.ext, Width: w, Height: h, Frames: 1,
		Video: &VideoInfo{Duration: dur, FPS: fps, Codec: st.CodecName}}, nil
}

// checkVideo checks a header's claims against the limits.
func (e *Engine) checkVideo(w, h int, dur, fps float64, nbFrames string) error {
	v := e.cfg.Uploads.VideoUploads
	switch {
	case w <= 0 || h <= 0:
		return invalidVideo("its frames have no size (%dx%d)", w, h)
	case int64(w)*int64(h) > v.VideoMaxPixels || w > e.cfg.MaxWidth || h > e.cfg.MaxHeight:
		return &Error{Kind: KindTooLarge, Msg: fmt.Sprintf("Video too large: %dx%d pixels; the limit is %d pixels (uploads.videoMaxPixels)", w, h, v.VideoMaxPixels)}
	case dur <= 0 || math.IsNaN(dur):
		return invalidVideo("its header gives no duration")
	case dur > v.VideoMaxSeconds:
		return &Error{Kind: KindTooLarge, Msg: fmt.Sprintf("Video too long: %.1fs; the limit is %gs (uploads.videoMaxSeconds)", dur, v.VideoMaxSeconds)}
	case fps <= 0 || fps > maxVideoFPS:
		return invalidVideo("its frame rate %.6g is not between 0 and %d", fps, maxVideoFPS)
	}
	if n, err := strconv.ParseFloat(nbFrames, 64); err == nil && n > dur*maxVideoFPS+1 {
		return invalidVideo("it claims %.0f frames in %.1fs", n, dur)
	}
	return nil
}

func codecList(ext string) string {
	names := make([]string, 0, 3)
	for _, n := range []string{"h264", "hevc", "av1", "vp8", "vp9"} {
		if _, ok := videoCodecs[ext][n]; ok {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

// rotated reports a display rotation of 90 or 270 degrees.
func rotated(tag string, side []struct {
	Rotation float64 `json:"rotation"`
}) bool {
	r, _ := strconv.ParseFloat(tag, 64)
	for _, s := range side {
		if s.Rotation != 0 {
			r = s.Rotation
		}
	}
	q := int(math.Round(math.Abs(r)/90)) % 4
	return q == 1 || q == 3
}

func parseSeconds(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}

// parseRate parses ffprobe's "num/den".
func parseRate(s string) float64 {
	num, den, ok := strings.Cut(s, "/")
	if !ok {
		return parseSeconds(s)
	}
	n, d := parseSeconds(num), parseSeconds(den)
	if d == 0 {
		return 0
	}
	return n / d
}

// videoOff is the refusal of a video upload while uploads.video is off.
func videoOff(f format) error {
	return &Error{Kind: KindUnsupported, Msg: "Unsupported image type: " + f.mime + " (uploads.video is off)"}
}

// InspectVideo checks a video upload: its type, its header against the
// limits (before any frame is decoded) and that its frames decode, and
// chooses its poster (videoposter.go), returned as a JPEG of the video's
// full size. It holds a pipeline slot while ffmpeg runs. Each of checks
// (the caller's own limits, an upload token's pixels) sees the header's
// Info before a frame is decoded; the first error refuses the video.
func (e *Engine) InspectVideo(ctx context.Context, data []byte, checks ...func(Info) error) (Info, []byte, error) {
	f, ok, err := sniffVideo(data)
	switch {
	case err != nil:
		return Info{}, nil, err
	case !ok:
		return Info{}, nil, unsupported(data)
	case e.video == nil:
		return Info{}, nil, videoOff(f)
	case int64(len(data)) > e.cfg.Uploads.VideoMaxBytes:
		return Info{}, nil, &Error{Kind: KindTooLarge, Msg: fmt.Sprintf("Video too large: %d bytes; the limit is %d (uploads.videoMaxBytes)", len(data), e.cfg.Uploads.VideoMaxBytes)}
	}
	s, ctx, err := e.takeSlot(ctx)
	if err != nil {
		return Info{}, nil, err
	}
	defer s.end()
	vf, err := writeVideoFile(bytes.NewReader(data))
	if err != nil {
		return Info{}, nil, err
	}
	defer vf.remove()
	info, err := e.probeVideo(ctx, vf, f)
	if err != nil {
		return Info{}, nil, err
	}
	for _, check := range checks {
		if err := check(info); err != nil {
			return Info{}, nil, err
		}
	}
	poster, err := e.choosePoster(ctx, vf, f, info)
	if err != nil {
		return Info{}, nil, err
	}
	return info, poster, nil
}
