package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
)

// preview is an animated preview of a segment of a video: duration
// seconds from start at fps frames a second, width pixels wide, made by
// ffmpeg as a lossless animated WebP and then rendered by the animation
// path, so the rest of the chain and the output (WebP or GIF, `.webp` by
// default) are an animation's.
type preview struct {
	start, duration float64
	fps, width      int
}

func init() {
	register("preview", describe(parsePreview, "An animated preview of a segment of a video (first step only; videos only); WebP unless the request asks for GIF.",
		numParam("start", 0, 86400, "Seconds from the start of the video; past the end, the segment ends there.").def(0),
		numParam("duration", 0.1, 10, "Seconds of video.").def(3),
		intParam("fps", 1, 30, "Frames a second.").def(10),
		intParam("width", 16, 1280, "Width in pixels; the height keeps the video's aspect ratio.").def(320)))
}

func parsePreview(p *Params) (Step, error) {
	st := &preview{start: p.Float("start"), duration: p.Float("duration"), fps: p.Int("fps"), width: p.Int("width")}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return st, nil
}

func (*preview) Apply(*State) error {
	return invalidf("preview: the image is not a video (preview is for videos, as a chain's first step)")
}

func (st *preview) picture(ctx context.Context, e *Engine, vf *videoFile, f format, info Info) ([]byte, map[string]string, error) {
	d := info.Video.Duration
	start := math.Min(st.start, math.Max(d-st.duration, 0))
	frames := int(math.Ceil(st.duration * float64(st.fps)))
	if frames > e.cfg.MaxFrames {
		return nil, nil, &Error{Kind: KindTooLarge, Msg: fmt.Sprintf("preview: %d frames; the limit is %d (maxFrames)", frames, e.cfg.MaxFrames)}
	}
	h := scaledHeight(info, st.width)
	args := append(videoIn(f, info.Video.Codec, "-ss", seconds(start), "-t", seconds(st.duration)),
		"-vf", fmt.Sprintf("fps=%d,scale=%d:%d:flags=lanczos", st.fps, st.width, h),
		"-frames:v", strconv.Itoa(frames), "-c:v", "libwebp_anim", "-lossless", "1", "-compression_level", "0",
		"-loop", "0", "-f", "webp", "pipe:1")
	out, err := e.video.run(ctx, vf.dir, "ffmpeg", args, frames*st.width*h*4+1<<16)
	if err != nil {
		return nil, nil, err
	}
	if len(out) == 0 {
		return nil, nil, invalidVideo("no frame decodes from %ss", seconds(start))
	}
	return out, map[string]string{"Frame-Time": seconds(start)}, nil
}
