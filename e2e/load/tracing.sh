#!/usr/bin/env bash
# What tracing costs a render: the thumbnail cell of the bench (200x200
# thumbnails of 1920x1080 JPEGs, variant cache off, the sources' stored
# variations built) with tracing off, and on as the server turns it on from
# OTEL_EXPORTER_OTLP_ENDPOINT (every request sampled, the spans of the
# request, its SQL statements, blob read, admission, decode, step and encode
# exported over OTLP/HTTP) to a receiver on loopback that decodes every
# export and counts its spans (gen -otlp).
#
# The two are measured in PAIRS pairs of segments, one server start per
# segment (tracing is set at start), the order alternating from pair to pair
# (off first, then on first), each segment a warm-up and then DURATION
# seconds of wrk. Why pairs: on a shared virtual machine the speed of the
# same work drifts by tens of percent within minutes; each pair compares two
# segments seconds apart and the alternating order cancels a steady drift.
# Beside throughput it takes the server's CPU time per request, which
# drifts far less than throughput does when the machine's speed changes,
# and which is what tracing adds; the verdict takes the median pair of
# both.
#
#   e2e/load/tracing.sh
#   PAIRS=16 CONCURRENCY=16 e2e/load/tracing.sh
#
# It prints per pair the requests/s, p99 and server CPU per request off and
# on, with the ratios (on / off); their medians; the spans the receiver got
# per traced request; and a verdict against the target: tracing costs under
# 3% of throughput (median on/off at least 0.97x). It is a benchmark, not a
# test: it exits 0 whatever the verdict. Compare its numbers only with
# numbers from the same machine.
#
# Environment: DURATION (seconds of wrk per segment, default 5), PAIRS
# (default 10), CONCURRENCY (wrk connections, default 4, the bench's
# smaller cell), SOURCES (distinct sources, default 32), THREADS (wrk
# threads, default 2), KEEP (1: keep the temp directory), VITRINE_BIN (a
# binary to test instead of building the working tree). Needs go, libvips
# to build vitrine, curl and wrk. A run takes about three minutes. Traffic
# goes to 127.0.0.1 only; the server and the receiver are killed on exit.
set -euo pipefail

DURATION=${DURATION:-5}
PAIRS=${PAIRS:-10}
CONCURRENCY=${CONCURRENCY:-4}
SOURCES=${SOURCES:-32}
THREADS=${THREADS:-2}
KEEP=${KEEP:-0}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

for cmd in go curl wrk; do
	command -v "$cmd" >/dev/null || { echo "tracing.sh: $cmd is not installed" >&2; exit 1; }
done

. "$here/lib.sh"
load_init vitrine-tracing
sink_pid=""
trap '[ -z "$sink_pid" ] || kill -TERM "$sink_pid" 2>/dev/null || true; load_cleanup' EXIT

write_config "$tmp/config.yaml" false
make_paths "$tmp/config.yaml"
"$tmp/vitrine" variations --config "$tmp/config.yaml" --data "$tmp/data" >/dev/null
native=$tmp/paths/thumb-1080p.paths

sink=127.0.0.1:$("$tmp/gen" -free-port)
"$tmp/gen" -otlp "$sink" &
sink_pid=$!
"$tmp/gen" -wait "http://$sink/stats"

# spans_so_far: the spans the receiver has counted.
spans_so_far() { curl -s "http://$sink/stats" | awk '{ print $4 }'; }

# segment mode: one server with tracing off or on, warmed up, then wrk;
# appends "requests rps p99 cpu-ms-per-request" to mode's list. A traced
# segment also adds the spans the receiver got for it once the server has
# stopped (which flushes them) to spans.
segment() {
	local cpu0 s0
	s0=$(spans_so_far)
	if [ "$1" = on ]; then
		OTEL_EXPORTER_OTLP_ENDPOINT="http://$sink" OTEL_SERVICE_NAME=vitrine-load start_server "$tmp/config.yaml"
	else
		start_server "$tmp/config.yaml"
	fi
	"$tmp/gen" -wait "$base/readyz"
	warm_up "$native" "$CONCURRENCY"
	warm_up "$native" "$SOURCES"
	cpu0=$(cpu_ms)
	measure "$native" "$CONCURRENCY"
	local cpu=$(($(cpu_ms) - cpu0))
	stop_server
	local -n list=$1
	list+=("$requests $rps $p99 $(awk -v c="$cpu" -v r="$requests" 'BEGIN { printf "%.3f", (r > 0 ? c / r : 0) }')")
	if [ "$1" = on ]; then
		span_count=$((span_count + $(spans_so_far) - s0))
		traced=$((traced + requests + CONCURRENCY + SOURCES))
	elif [ "$(spans_so_far)" != "$s0" ]; then
		echo "tracing.sh: the receiver got spans from a server with tracing off" >&2
		exit 1
	fi
	[ "$errors" = 0 ] || { echo "tracing.sh: $errors errors in a segment with tracing $1 (wrk.log)" >&2; exit 1; }
}

off=() on=() span_count=0 traced=0
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for p in $(seq "$PAIRS"); do
	if [ $((p % 2)) = 1 ]; then
		segment off
		segment on
	else
		segment on
		segment off
	fi
done

echo
echo "vitrine tracing cost: thumbnail 200x200 of 1080p JPEGs, c=$CONCURRENCY, $PAIRS pairs of ${DURATION}s segments" \
	"of wrk -t$THREADS (off, on; the order alternating), a server start per segment, $SOURCES sources, variant" \
	"cache off; $(nproc) CPUs, load average $load0 before, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo
echo "| pair | off req/s | on req/s | ratio | off p99 ms | on p99 ms | ratio | off CPU ms/req | on CPU ms/req | ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|"
rps_r=() p99_r=() cpu_r=()
for i in "${!off[@]}"; do
	read -r -a a <<<"${off[$i]}"
	read -r -a b <<<"${on[$i]}"
	rps_r+=("$(raw "${b[1]}" "${a[1]}")") p99_r+=("$(raw "${b[2]}" "${a[2]}")") cpu_r+=("$(raw "${b[3]}" "${a[3]}")")
	echo "| $((i + 1)) | ${a[1]} | ${b[1]} | $(shown "${rps_r[-1]}") | ${a[2]} | ${b[2]} | $(shown "${p99_r[-1]}") |" \
		"${a[3]} | ${b[3]} | $(shown "${cpu_r[-1]}") |"
done
rps_ratio=$(median "${rps_r[@]}")
echo "| median of the pairs | | | $(shown "$rps_ratio") | | | $(shown "$(median "${p99_r[@]}")") | | |" \
	"$(shown "$(median "${cpu_r[@]}")") |"
echo
echo "spans exported: $span_count for $traced traced requests ($(awk -v s="$span_count" -v r="$traced" \
	'BEGIN { printf "%.1f", (r > 0 ? s / r : 0) }') a request); the receiver: $(curl -s "http://$sink/stats")"
echo
verdict=FAIL
awk -v r="$rps_ratio" 'BEGIN { exit !(r >= 0.97) }' && verdict=PASS
echo "verdict: $verdict (median of $PAIRS pairs): throughput with tracing on $(shown "$rps_ratio") off (target >= 0.97x)"
