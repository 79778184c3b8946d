#!/usr/bin/env bash
# Load test of native requests beside hostile WebAssembly guests: does a
# filter that loops, sleeps or is merely slow take the native pipeline down
# with it? One run, the server on its default configuration (plus
# filters.dir, filters.allow: [clock], and the variant cache off so every
# request renders), wrk on loopback, measures the native workload of run.sh
# (thumbnail 200x200 of 1080p JPEGs) twice, each on a fresh server:
#
#   alone    wrk for DURATION, nothing else running;
#   beside   the same, while three separate client processes (hammer/) keep
#            HOSTILE_C requests each in flight on three guests built from
#            hostile/: loop (never returns; the default 2 s timeout stops it),
#            sleep (one WASI clock sleep of 20 s, poll_oneoff, under a
#            timeoutMs of 1000; granted the clock capability) and slow
#            (legitimate: a pixel loop repeated, about 0.5 s a call on an idle
#            machine, under a 10 s timeout). Every hostile request has a nonce
#            of its own, so none is coalesced or cached; they start RAMP
#            seconds before wrk and stop starting when it ends, then the ones
#            still running get up to 30 s to answer.
#
#   e2e/load/hostile.sh
#   DURATION=30 CONCURRENCY=16 e2e/load/hostile.sh
#
# It prints: one call of each guest alone (status and time); the native
# req/s, p50 and p99 alone and beside the guests with the ratios (beside /
# alone); the server's garbage collections during each phase and its
# longest stop-the-world pause (from /metrics, which the configuration turns
# on); what the hostile requests got (status counts, 200/503/504, and
# times); and a verdict against the target: native throughput beside the
# guests at least 0.9x alone, p99 at most 1.5x. It is a benchmark, not a test:
# it exits 0 whatever the verdict. Its numbers describe this machine, under
# whatever else runs on it (the load average is printed): compare them only
# with numbers from the same machine.
#
# Environment: DURATION (seconds of wrk per phase, default 15), CONCURRENCY
# (wrk connections on the native workload, default 4), HOSTILE_C
# (connections per hostile guest, default 4), RAMP (seconds the guests are
# hammered before wrk starts, default 3), GAP (least time between two starts
# on one hostile connection, default 100ms), SOURCES (distinct sources,
# default 32), THREADS (wrk threads, default 2), KEEP (1: keep the temp
# directory, with server.log and wrk.log), FILTERS (lines added to the
# filters section, each indented two spaces: FILTERS="  nice: 19"),
# PPROF (an address: serve each server's profiles there,
# debug.pprofListen), VITRINE_BIN (a binary to test
# instead of building the working tree). Needs go (the version go.mod
# names; it also builds the guests for wasip1), libvips to build vitrine,
# curl, and wrk (installed with apt-get when missing). A run takes about two
# minutes, most of it generating sources and waiting for the sleeping
# guest's calls. Traffic goes to 127.0.0.1 only; the server and the clients
# are killed on exit.
set -euo pipefail

DURATION=${DURATION:-15}
CONCURRENCY=${CONCURRENCY:-4}
HOSTILE_C=${HOSTILE_C:-4}
RAMP=${RAMP:-3}
GAP=${GAP:-100ms}
SOURCES=${SOURCES:-32}
THREADS=${THREADS:-2}
KEEP=${KEEP:-0}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

for cmd in go curl; do
	command -v "$cmd" >/dev/null || { echo "hostile.sh: $cmd is not installed" >&2; exit 1; }
done
if ! command -v wrk >/dev/null; then
	echo "installing wrk (apt)" >&2
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get install -y -qq wrk >/dev/null 2>&1 ||
		{ $sudo apt-get update -qq && $sudo apt-get install -y -qq wrk >/dev/null; } ||
		{ echo "hostile.sh: wrk is not installed and apt-get could not install it" >&2; exit 1; }
fi

. "$here/lib.sh"
load_init vitrine-hostile
hammers=()
stop_hammers() {
	local h
	for h in "${hammers[@]}"; do
		kill -TERM "$h" 2>/dev/null || true
		wait "$h" 2>/dev/null || true
	done
	hammers=()
}
trap 'stop_hammers; load_cleanup' EXIT

(cd "$root" && go build -o "$tmp/hammer" ./e2e/load/hammer)
guests=(loop sleep slow)
for g in "${guests[@]}"; do
	mkdir -p "$tmp/filters/$g"
	cp "$here/hostile/$g/filter.json" "$tmp/filters/$g/"
	(cd "$here/hostile" && GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared \
		-o "$tmp/filters/$g/filter.wasm" "./$g")
done
write_config "$tmp/config.yaml" false "metrics:
  enabled: true
filters:
  dir: $tmp/filters
  allow: [clock]${FILTERS:+
$FILTERS}${PPROF:+
debug:
  pprofListen: $PPROF}"
make_paths "$tmp/config.yaml"
# The sources' stored variations built now, so that neither phase's
# server builds them in the background while it is measured.
"$tmp/vitrine" variations --config "$tmp/config.yaml" --data "$tmp/data" >/dev/null
native=$tmp/paths/thumb-1080p.paths

# The query of each guest's requests; %d is the request's nonce. The slow
# guest's output is made a thumbnail so that encoding it costs little.
declare -A query=(
	[loop]='t[]=loop:n=%d'
	[sleep]='t[]=sleep:n=%d'
	[slow]='t[]=slow:n=%d&t[]=thumbnail:width=200,height=200'
)

# hammer guest c duration n: the hammer client on guest's query, in place of
# the subshell it is run in (with &), so that its pid is the hammer's.
hammer() {
	exec "$tmp/hammer" -url "$base" -priv "$priv" -images "$native" -name "$1" -query "${query[$1]}" \
		-c "$2" -d "$3" -n "$4" -gap "$GAP" -drain 30s
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# gc_stats: the server's garbage collections so far and its longest
# stop-the-world pause since it started, in ms, from its /metrics.
gc_stats() {
	curl -s "$base/metrics" | awk '/^go_gc_duration_seconds_count /{n=$2}
		/^go_gc_duration_seconds\{quantile="1"\}/{m=$2*1000} END{printf "%d %.1f", n, m}'
}
# gc_during before after: "N collections, longest pause M ms".
gc_during() {
	read -r n0 _ <<<"$1"
	read -r n1 m1 <<<"$2"
	echo "$((n1 - n0)) collections, longest pause since start $m1 ms"
}

# Phase 1: the native workload alone, then one call of each guest alone.
load_alone=$(loadavg)
start_server "$tmp/config.yaml"
"$tmp/gen" -wait "$base/readyz" # the guests compiled and loaded
warm_up "$native" 1
gc0=$(gc_stats)
measure "$native" "$CONCURRENCY"
alone=("$requests" "$rps" "$p50" "$p99" "$(peak_rss)" "$errors")
gc_alone=$(gc_during "$gc0" "$(gc_stats)")
for g in slow loop sleep; do
	hammer "$g" 1 1h 1 >"$tmp/single-$g.out" &
	hammers=($!)
	wait "${hammers[0]}"
done
hammers=()
stop_server

# Phase 2: the native workload beside the hammered guests.
load_beside=$(loadavg)
start_server "$tmp/config.yaml"
"$tmp/gen" -wait "$base/readyz" # the guests compiled and loaded
warm_up "$native" 1
for g in "${guests[@]}"; do
	hammer "$g" "$HOSTILE_C" "$((RAMP + DURATION))s" 1000 >"$tmp/hammer-$g.out" &
	hammers+=($!)
done
sleep "$RAMP"
gc0=$(gc_stats)
measure "$native" "$CONCURRENCY"
beside=("$requests" "$rps" "$p50" "$p99" "$(peak_rss)" "$errors")
gc_beside=$(gc_during "$gc0" "$(gc_stats)")
wait "${hammers[@]}"
hammers=()
stop_server

# ratio a b: a / b as 1.23x (0.012x below 0.1), - when b is 0.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "-"; else printf (a / b < 0.1 ? "%.3fx" : "%.2fx"), a / b }'
}
# Latencies of a phase without a completed request mean nothing (wrk prints
# 0): they show as "-", and so do their ratios.
[ "${alone[0]}" != 0 ] || { alone[2]=-; alone[3]=-; }
[ "${beside[0]}" != 0 ] || { beside[2]=-; beside[3]=-; }
table_row() { # label cells...
	printf '| %s |' "$1"
	shift
	printf ' %s |' "$@"
	echo
}
rps_ratio=$(ratio "${beside[1]}" "${alone[1]}")
p50_ratio=-
p99_ratio=-
if [ "${alone[0]}" != 0 ] && [ "${beside[0]}" != 0 ]; then
	p50_ratio=$(ratio "${beside[2]}" "${alone[2]}")
	p99_ratio=$(ratio "${beside[3]}" "${alone[3]}")
fi

echo
echo "vitrine hostile-guest load test: native thumbnail 200x200 of 1080p JPEGs, c=$CONCURRENCY," \
	"${DURATION}s of wrk -t$THREADS per phase, $SOURCES sources, variant cache off; $(nproc) CPUs," \
	"load average $load_alone before phase 1, $load_beside before phase 2, $(loadavg) at the end"
echo
echo "one call of each guest, nothing else running:"
for g in slow loop sleep; do
	echo "  $(cat "$tmp/single-$g.out")"
done
echo
echo "native requests (latencies of the completed ones; a request still waiting when wrk stops is not counted):"
echo
echo "| native, c=$CONCURRENCY | requests | req/s | p50 ms | p99 ms | peak RSS MB | errors |"
echo "|---|---|---|---|---|---|---|"
table_row alone "${alone[@]}"
table_row "beside hostile guests" "${beside[@]}"
table_row "beside / alone" "" "$rps_ratio" "$p50_ratio" "$p99_ratio" "" ""
echo
echo "the server's garbage collections during wrk: alone $gc_alone; beside the guests $gc_beside"
echo
echo "hostile requests beside the native workload (c=$HOSTILE_C per guest, from ${RAMP}s before wrk" \
	"to its end, a connection starting at most one request per $GAP):"
for g in "${guests[@]}"; do
	echo "  $(cat "$tmp/hammer-$g.out")"
done
echo
verdict=FAIL
if [ "$p99_ratio" != - ] && [ "$rps_ratio" != - ] &&
	awk -v r="${beside[1]}" -v r0="${alone[1]}" -v p="${beside[3]}" -v p0="${alone[3]}" \
		'BEGIN { exit !(r >= 0.9 * r0 && p <= 1.5 * p0) }'; then
	verdict=PASS
fi
p99_said="p99 $p99_ratio alone (target <= 1.5x)"
[ "${beside[0]}" != 0 ] || p99_said="no native request completed beside them (target: p99 <= 1.5x alone)"
echo "verdict: $verdict: native throughput beside hostile guests $rps_ratio alone (target >= 0.9x), $p99_said"
