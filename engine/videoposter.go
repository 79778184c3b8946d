package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/davidbyttow/govips/v2/vips"
)

// The poster of a video is chosen once, at upload: 12 candidate frames of
// the first 10 seconds are decoded small and grey in one run; frames that
// are nearly black, nearly white or flat (a fade, a title card's blank)
// are passed over, and of the rest the sharpest (the largest variance of
// its Laplacian) wins. That frame is then decoded at full size with an
// exact seek and kept as a q92 JPEG, which every chain renders from.
const (
	posterCandidates = 12
	posterSpan       = 10.0 // seconds
	posterW, posterH = 160, 90
	posterQuality    = 92
)

// choosePoster returns the poster JPEG of the video in vf.
func (e *Engine) choosePoster(ctx context.Context, vf *videoFile, f format, info Info) ([]byte, error) {
	span := min(posterSpan, info.Video.Duration)
	rate := float64(posterCandidates) / span
	args := append(videoIn(f, info.Video.Codec), "-t", seconds(span),
		"-vf", fmt.Sprintf("fps=%s,scale=%d:%d,format=gray", strconv.FormatFloat(rate, 'f', 6, 64), posterW, posterH),
		"-frames:v", strconv.Itoa(posterCandidates), "-f", "rawvideo", "pipe:1")
	frame := posterW * posterH
	out, err := e.video.run(ctx, vf.dir, "ffmpeg", args, posterCandidates*frame)
	if err != nil {
		return nil, err
	}
	if len(out) < frame {
		return nil, invalidVideo("no frame of it decodes")
	}
	best, bestScore := 0, -1.0
	for i := 0; (i+1)*frame <= len(out); i++ {
		if score := posterScore(out[i*frame:(i+1)*frame], posterW, posterH); score > bestScore {
			best, bestScore = i, score
		}
	}
	at := float64(best) / rate
	tiff, err := e.extractFrame(ctx, vf, f, info, at, true, 0)
	if err != nil {
		return nil, err
	}
	return tiffToJPEG(tiff, posterQuality)
}

// posterScore is a grey frame's worth as a poster: the variance of its
// Laplacian, or -1 for a frame nearly black (mean under 24), nearly white
// (over 232) or flat (standard deviation under 10), so any frame with a
// picture beats those.
func posterScore(g []byte, w, h int) float64 {
	var sum, sq float64
	for _, v := range g {
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	n := float64(len(g))
	mean := sum / n
	sd := math.Sqrt(max(sq/n-mean*mean, 0))
	if mean < 24 || mean > 232 || sd < 10 {
		return -1 + sd/1000 // among blank frames, the least blank
	}
	var ls, lsq float64
	for y := 1; y < h-1; y++ {
		for x := 1; x < w-1; x++ {
			i := y*w + x
			l := 4*float64(g[i]) - float64(g[i-1]) - float64(g[i+1]) - float64(g[i-w]) - float64(g[i+w])
			ls += l
			lsq += l * l
		}
	}
	m := float64((w - 2) * (h - 2))
	return lsq/m - (ls/m)*(ls/m)
}

// extractFrame decodes the frame at second t at full size as an
// uncompressed RGB TIFF (libvips loads TIFF from a buffer, not PPM).
// exact seeks to t precisely; otherwise the keyframe at or before t is
// decoded, which reads far less.
// width, when not 0, scales the frame to that width (and the height
// that keeps its aspect ratio), in the same run.
func (e *Engine) extractFrame(ctx context.Context, vf *videoFile, f format, info Info, t float64, exact bool, width int) ([]byte, error) {
	pre := []string{"-ss", seconds(t)}
	if !exact {
		pre = append([]string{"-noaccurate_seek", "-skip_frame", "nokey"}, pre...)
	}
	args := videoIn(f, info.Video.Codec, pre...)
	w, h := info.Width, info.Height
	if width > 0 {
		w, h = width, scaledHeight(info, width)
		args = append(args, "-vf", fmt.Sprintf("scale=%d:%d:flags=lanczos", w, h))
	}
	args = append(args, "-frames:v", "1", "-pix_fmt", "rgb24", "-c:v", "tiff", "-f", "image2pipe", "pipe:1")
	out, err := e.video.run(ctx, vf.dir, "ffmpeg", args, w*h*3+1<<16)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, invalidVideo("no frame decodes at %ss", seconds(t))
	}
	return out, nil
}

// tiffToJPEG encodes a frame as a JPEG of quality q.
func tiffToJPEG(tiff []byte, q int) ([]byte, error) {
	ref, err := vips.LoadImageFromBuffer(tiff, vips.NewImportParams())
	if err != nil {
		return nil, fmt.Errorf("engine: video frame: %w", err)
	}
	defer ref.Close()
	p := vips.NewJpegExportParams()
	p.Quality = q
	p.StripMetadata = true
	out, _, err := ref.ExportJpeg(p)
	if err != nil {
		return nil, fmt.Errorf("engine: video frame: %w", err)
	}
	return out, nil
}

// scaledHeight is the height of a frame scaled to width, at least 1.
func scaledHeight(info Info, width int) int {
	return max(1, int(math.Round(float64(width)*float64(info.Height)/float64(info.Width))))
}

// seconds formats t for ffmpeg's -ss and -t.
func seconds(t float64) string { return strconv.FormatFloat(max(t, 0), 'f', 3, 64) }
