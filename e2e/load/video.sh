#!/usr/bin/env bash
# Pictures of a video, side by side in one run (e2e/README.md, "Video"):
# one vitrine with uploads.video on and the variant cache off, and the floor,
# ffmpeg run once per request (`ffmpeg -ss T -i in -frames:v 1`, scaled to
# the same width, to a JPEG). The video is made here: a photograph panned
# across for DURATION_VIDEO seconds at 1920x1080, 30 fps, H.264 with a
# keyframe every 2 s (what web video uses), AAC audio. Prints the table of
# e2e/load/videobench. Its numbers describe this machine only.
#
#   e2e/load/video.sh                     # 4 at once, 20 s per workload
#   CONCURRENCY=8 DURATION=10 e2e/load/video.sh
#
# Environment: CONCURRENCY (default 4), DURATION (seconds per workload,
# default 20), DURATION_VIDEO (seconds, default 60), WIDTH (default 640),
# KEEP (1: keep the temp directory), VITRINE_BIN (a binary to test instead
# of building the working tree). Traffic goes to 127.0.0.1 only.
set -euo pipefail

CONCURRENCY=${CONCURRENCY:-4}
DURATION=${DURATION:-20}
DURATION_VIDEO=${DURATION_VIDEO:-60}
WIDTH=${WIDTH:-640}
KEEP=${KEEP:-0}
THREADS=1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
command -v ffmpeg >/dev/null || { echo "video.sh needs ffmpeg: make test-deps installs it" >&2; exit 1; }
load_init vitrine-video
(cd "$root" && go build -o "$tmp/videobench" ./e2e/load/videobench)

photo=$(ls /usr/share/backgrounds/mate/nature/*.jpg 2>/dev/null | head -1 || true)
[ -n "$photo" ] || { echo "video.sh pans across a photograph of mate-backgrounds: make test-deps installs it" >&2; exit 1; }
echo "making a ${DURATION_VIDEO}s 1080p H.264 video from $(basename "$photo")" >&2
ffmpeg -nostdin -loglevel error -loop 1 -i "$photo" -f lavfi -i "sine=frequency=440:sample_rate=48000" \
	-t "$DURATION_VIDEO" -filter_complex "[0:v]scale=3840:-2,crop=1920:1080:x='(iw-1920)*t/$DURATION_VIDEO':y='(ih-1080)/2',format=yuv420p[v]" \
	-map '[v]' -map 1:a -r 30 -c:v libx264 -preset veryfast -g 60 -c:a aac -movflags +faststart "$tmp/in.mp4"

write_config "$tmp/video.yaml" false "uploads:
  video: true"
start_server "$tmp/video.yaml"
"$tmp/videobench" -url "$base" -priv "$priv" -video "$tmp/in.mp4" -c "$CONCURRENCY" -duration "${DURATION}s" -width "$WIDTH"
echo "server peak RSS: $(peak_rss) MB" >&2
stop_server
