#!/usr/bin/env bash
# A realistic mixed workload against the vitrine binary, with wrk on
# loopback: a corpus of IMAGES distinct sources (half 1920x1080 JPEGs, a
# quarter 4000x3000 JPEGs, an eighth 1600x1000 PNG screenshots, an eighth
# 1920x1080 WebPs), and one list of COUNT requests drawn from a Zipf
# distribution (exponent ZIPF_S, seed SEED) over (source, chain, format),
# the chains a site asks for: 150x150 JPEG and 320x320 WebP thumbnails,
# width 800 JPEG, width 1200 WebP, a centred 1000x1000 crop at width 400.
# Popular requests repeat, as they do on a site. Each wrk thread replays its
# own slice of the list in order. The list is replayed against one fresh
# server per mode (variant cache off, then on; each from the same freshly
# uploaded data, so the cache starts empty), and prints requests/s, p50/p99,
# the variant cache's hit rate, the share of the replayed requests that
# repeat an earlier one (the most any cache could hit) and peak RSS.
#
#   e2e/load/mixed.sh                            # 200 images, 15 s a mode
#   IMAGES=50 DURATION=10 e2e/load/mixed.sh
#   ZIPF_S=0.8 SEED=7 CONCURRENCY="4 16" e2e/load/mixed.sh
#   e2e/load/mixed.sh --imgproxy http://127.0.0.1:18081
#
# --imgproxy URL replays the same list, in imgproxy's URL format
# (/unsafe/rs:fill:150:150/q:80/plain/local:///m0001.jpg@jpg), against an
# imgproxy already running on loopback with IMGPROXY_LOCAL_FILESYSTEM_ROOT
# at the corpus (or at its parent, with IMGPROXY_PREFIX the corpus's path
# under it); IMGPROXY_PID adds its peak RSS. The list is written to
# $CORPUS/imgproxy.paths either way, for a harness of its own.
#
# Environment: IMAGES (default 200), COUNT (default 100000), ZIPF_S (default
# 1.0), SEED (default 1), DURATION (seconds per mode, default 15),
# CONCURRENCY (default 16), THREADS (wrk threads, default 2), MODES
# (default "off on"), VARIATIONS (stored variations, built before the modes
# run; default true, false turns them off), CORPUS (the sources, generated where missing and kept;
# default ~/.cache/vitrine-load-mixed), KEEP, VITRINE_BIN as in run.sh.
# Traffic goes to 127.0.0.1 only; the server is killed on exit.
set -euo pipefail

IMAGES=${IMAGES:-200}
COUNT=${COUNT:-100000}
ZIPF_S=${ZIPF_S:-1.0}
SEED=${SEED:-1}
DURATION=${DURATION:-15}
CONCURRENCY=${CONCURRENCY:-16}
THREADS=${THREADS:-2}
MODES=${MODES:-"off on"}
VARIATIONS=${VARIATIONS:-true}
CORPUS=${CORPUS:-${XDG_CACHE_HOME:-$HOME/.cache}/vitrine-load-mixed}
KEEP=${KEEP:-0}
imgproxy=""
while [ $# -gt 0 ]; do
	case $1 in
	--imgproxy) imgproxy=${2:?--imgproxy needs a URL}; shift 2 ;;
	*) echo "usage: $0 [--imgproxy URL]" >&2; exit 2 ;;
	esac
done
case $imgproxy in "" | http://127.* | http://localhost[:/]* | http://\[::1\]*) ;;
*) echo "--imgproxy: a loopback URL only" >&2; exit 2 ;; esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
if ! command -v wrk >/dev/null; then
	echo "installing wrk (apt)" >&2
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get install -y -qq wrk >/dev/null 2>&1 ||
		{ $sudo apt-get update -qq && $sudo apt-get install -y -qq wrk >/dev/null; }
fi

. "$here/lib.sh"
load_init vitrine-mixed
(cd "$root" && go build -o "$tmp/mixed" ./e2e/load/mixed)
write_config "$tmp/off.yaml" false "variations:
  enabled: $VARIATIONS"
write_config "$tmp/on.yaml" true "variations:
  enabled: $VARIATIONS"
wrk_script=$here/mixed.lua

start_server "$tmp/off.yaml"
summary=$("$tmp/mixed" -url "$base" -user load -pub load -priv "$priv" -corpus "$CORPUS" -n "$IMAGES" \
	-count "$COUNT" -s "$ZIPF_S" -seed "$SEED" -imgproxy-prefix "${IMGPROXY_PREFIX:-}" -out "$tmp/paths")
stop_server
# The stored variations of the corpus, as the background builder leaves them
# seconds after an upload (the modes measure the steady state).
[ "$VARIATIONS" = false ] || "$tmp/vitrine" variations --config "$tmp/off.yaml" --data "$tmp/data" >/dev/null
cp "$tmp/paths/imgproxy.paths" "$CORPUS/imgproxy.paths"
mv "$tmp/data" "$tmp/data.uploaded"
echo "$summary" >&2

# repeats paths-file requests threads: the share of the requests each
# thread replayed (the first requests/threads of its slice) that name a
# target replayed before, by any thread, as a percentage.
repeats() {
	awk -v n="$2" -v t="$3" '{ l[NR] = $0 }
		END { per = int(NR / t); each = int((n + t - 1) / t); if (each > per) each = per
			for (k = 0; k < t; k++) for (i = 1; i <= each; i++) { all++; if (seen[l[k * per + i]]++) rep++ }
			if (all) printf "%.0f%%", 100 * rep / all; else printf "-" }' "$1"
}

# row server mode c rss: a table row from measure's results.
row() {
	local hit="-" t=$THREADS
	[ "$t" -le "$3" ] || t=$3
	[ "$2" = - ] || hit=$(awk -v h="$hits" -v r="$requests" 'BEGIN { printf "%.0f%%", r ? 100 * h / r : 0 }')
	[ "$wrapped" != 1 ] || echo "note: a wrk thread replayed its whole slice and wrapped round: raise COUNT" >&2
	rows+=("| $1 | $2 | $3 | $rps | $p50 | $p99 | $hit | $(repeats "$4" "$requests" "$t") | $5 | $errors |")
	echo "${rows[-1]}" >&2
}

for c in $CONCURRENCY; do
	for mode in $MODES; do
		rm -rf "$tmp/data"
		cp -a "$tmp/data.uploaded" "$tmp/data"
		start_server "$tmp/$mode.yaml"
		measure "$tmp/paths/vitrine.paths" "$c"
		row vitrine "$mode" "$c" "$tmp/paths/vitrine.paths" "$(peak_rss)"
		stop_server
	done
	if [ -n "$imgproxy" ]; then
		wrk_url=$imgproxy
		measure "$tmp/paths/imgproxy.paths" "$c"
		wrk_url=""
		rss="-"
		[ -z "${IMGPROXY_PID:-}" ] || rss=$(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$IMGPROXY_PID/status")
		row imgproxy - "$c" "$tmp/paths/imgproxy.paths" "$rss"
	fi
done

echo
echo "vitrine mixed workload: $summary; stored variations $VARIATIONS; ${DURATION}s per mode, wrk -t$THREADS, $(nproc) CPUs"
echo
echo "| server | variant cache | c | req/s | p50 ms | p99 ms | hit rate | repeats | peak RSS MB | errors |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
