#!/usr/bin/env bash
# Load test of native requests beside hostile WebAssembly guests: does a
# filter that loops, sleeps or is merely slow take the native pipeline down
# with it? The server on its default configuration (plus filters.dir,
# filters.allow: [clock], metrics on, and the variant cache off so every
# request renders), wrk on loopback, the native workload of run.sh
# (thumbnail 200x200 of 1080p JPEGs), and three separate client processes
# (hammer/) that keep HOSTILE_C requests each in flight on three guests
# built from hostile/: loop (never returns; the default 2 s timeout stops
# it), sleep (one WASI clock sleep of 20 s, poll_oneoff, under a timeoutMs
# of 1000; granted the clock capability) and slow (legitimate: a pixel loop
# repeated, about 0.5 s a call on an idle machine, under a 10 s timeout).
# Every hostile request has a nonce of its own, so none is coalesced or
# cached.
#
# The native workload is measured in PAIRS pairs of segments of DURATION
# seconds each on one running server, one segment alone and one beside the
# guests, the order alternating from pair to pair (alone first, then beside
# first), ROUNDS times, each round on a fresh server:
#
#   alone    the hammers paused (they start nothing, hammer/'s SIGUSR1) and
#            every hostile request answered (the server's
#            vitrine_http_requests_in_flight), then wrk;
#   beside   the hammers resumed RAMP seconds before wrk starts.
#
# Why pairs of short segments on one server: on a shared virtual machine
# the speed of the same work drifts by tens of percent within a minute, and
# two phases minutes apart compare the drift more than the guests. Each
# pair's ratio (beside / alone) compares two segments seconds apart, and
# the alternating order cancels a steady drift; the verdict takes the
# median pair.
#
#   e2e/load/hostile.sh
#   PAIRS=16 DURATION=3 e2e/load/hostile.sh
#
# It prints: one call of each guest alone (status and time); per pair the
# native req/s, p50 and p99 alone and beside the guests with the ratios
# (beside / alone); the medians of the pairs' ratios and the ratio of all
# segments' requests; the server's garbage collections during wrk and its
# CPU time per native request (the threads running guests apart); what the
# hostile requests got (status counts, 200/503/504, and times, over each
# round); and a verdict against the target: native throughput beside the
# guests at least 0.9x alone, p99 at most 1.5x (medians of the pairs). It
# is a benchmark, not a test: it exits 0 whatever the verdict. Its numbers
# describe this machine, under whatever else runs on it (the load average
# is printed): compare them only with numbers from the same machine.
#
# Environment: DURATION (seconds of wrk per segment, default 5), PAIRS
# (pairs per round, default 12), ROUNDS (fresh servers, default 1),
# CONCURRENCY (wrk connections on the native workload, default 4),
# HOSTILE_C (connections per hostile guest, default 4), RAMP (seconds the
# guests are hammered before a beside segment's wrk starts, default 2), GAP
# (least time between two starts on one hostile connection, default
# 100ms), SOURCES (distinct sources, default 32), THREADS (wrk threads,
# default 2), KEEP (1: keep the temp directory, with server.log and
# wrk.log), FILTERS (lines added to the filters section, each indented two
# spaces: FILTERS="  nice: 19"), PPROF (an address: serve each server's
# profiles there, debug.pprofListen), VITRINE_BIN (a binary to test instead
# of building the working tree). Needs go (the version go.mod names; it
# also builds the guests for wasip1), libvips to build vitrine, curl, and
# wrk (installed with apt-get when missing). A run takes about five
# minutes, most of it generating sources and the segments. Traffic goes to
# 127.0.0.1 only; the server and the clients are killed on exit.
set -euo pipefail

DURATION=${DURATION:-5}
PAIRS=${PAIRS:-12}
CONCURRENCY=${CONCURRENCY:-4}
HOSTILE_C=${HOSTILE_C:-4}
RAMP=${RAMP:-2}
GAP=${GAP:-100ms}
SOURCES=${SOURCES:-32}
THREADS=${THREADS:-2}
KEEP=${KEEP:-0}
ROUNDS=${ROUNDS:-1}

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
# The sources' stored variations built now, so that no server builds them
# in the background while it is measured.
"$tmp/vitrine" variations --config "$tmp/config.yaml" --data "$tmp/data" >/dev/null
native=$tmp/paths/thumb-1080p.paths

# The query of each guest's requests; %d is the request's nonce. The slow
# guest's output is made a thumbnail so that encoding it costs little.
declare -A query=(
	[loop]='t[]=loop:n=%d'
	[sleep]='t[]=sleep:n=%d'
	[slow]='t[]=slow:n=%d&t[]=thumbnail:width=200,height=200'
)

# hammer guest c duration n [flags]: the hammer client on guest's query, in
# place of the subshell it is run in (with &), so that its pid is the
# hammer's.
hammer() {
	exec "$tmp/hammer" -url "$base" -priv "$priv" -images "$native" -name "$1" -query "${query[$1]}" \
		-c "$2" -d "$3" -n "$4" -gap "$GAP" -drain 30s "${@:5}"
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

# cpu_during before after: "server CPU S ms/s (N ms per native request)",
# the server's whole CPU time during the segment (native requests, hostile
# requests and guests) per second and over the native requests wrk
# completed.
cpu_during() {
	awk -v c="$(($2 - $1))" -v r="$requests" -v d="$DURATION" \
		'BEGIN { printf "server CPU %.0f ms/s (%.2f ms per native request)", c / d, (r > 0 ? c / r : 0) }'
}

# inflight: the HTTP requests the server is serving, this one included.
inflight() {
	curl -s "$base/metrics" | awk '/^vitrine_http_requests_in_flight /{ printf "%d", $2 }'
}

# segment kind: one segment of wrk, kind alone (the hammers paused, once
# every hostile request has answered) or beside (the hammers resumed RAMP
# seconds before); appends "requests rps p50 p99 errors" to kind's list and
# the segment's collections and CPU time to its notes.
segment() {
	local gc0 cpu0 i
	if [ "$1" = alone ]; then
		kill -USR1 "${hammers[@]}"
		for i in $(seq 600); do
			[ "$(inflight)" -gt 1 ] || break
			[ "$i" != 600 ] || echo "hostile requests still running after 60 s; measuring beside them" >&2
			sleep 0.1
		done
	else
		kill -USR2 "${hammers[@]}"
		sleep "$RAMP"
	fi
	gc0=$(gc_stats) cpu0=$(cpu_ms)
	measure "$native" "$CONCURRENCY"
	local -n list=$1 notes=notes_$1
	list+=("$requests $rps $p50 $p99 $errors")
	notes+=("$(gc_during "$gc0" "$(gc_stats)"); $(cpu_during "$cpu0" "$(cpu_ms)")")
}

# round r: a fresh server, the guests hammered from the start (paused
# before the first alone segment), PAIRS pairs of segments; in round 1,
# first one call of each guest with nothing else running.
round() {
	local g p i
	load_before+=("$(loadavg)")
	start_server "$tmp/config.yaml"
	"$tmp/gen" -wait "$base/readyz" # the guests compiled and loaded
	warm_up "$native" "$CONCURRENCY"
	if [ "$1" = 1 ]; then
		for g in slow loop sleep; do
			hammer "$g" 1 1h 1 >"$tmp/single-$g.out" &
			hammers=($!)
			wait "${hammers[0]}"
		done
		hammers=()
	fi
	rm -f "$tmp"/ready-*
	for g in "${guests[@]}"; do
		hammer "$g" "$HOSTILE_C" 24h 1000000 -ready "$tmp/ready-$g" >"$tmp/hammer-$g-$1.out" &
		hammers+=($!)
	done
	for g in "${guests[@]}"; do
		for i in $(seq 200); do
			[ ! -e "$tmp/ready-$g" ] || continue 2
			sleep 0.05
		done
		echo "hostile.sh: the $g hammer did not start" >&2
		exit 1
	done
	for p in $(seq "$PAIRS"); do
		if [ $((p % 2)) = 1 ]; then
			segment alone
			segment beside
		else
			segment beside
			segment alone
		fi
	done
	peaks+=("$(peak_rss)")
	stop_hammers
	stop_server
}

alone=() beside=() notes_alone=() notes_beside=() load_before=() peaks=()
for r in $(seq "$ROUNDS"); do
	round "$r"
done

table_row() { # label cells...
	printf '| %s |' "$1"
	shift
	printf ' %s |' "$@"
	echo
}

echo
echo "vitrine hostile-guest load test: native thumbnail 200x200 of 1080p JPEGs, c=$CONCURRENCY," \
	"$PAIRS pairs of ${DURATION}s segments of wrk -t$THREADS (alone, beside; the order alternating)" \
	"on each of $ROUNDS server(s), $SOURCES sources, variant cache off; $(nproc) CPUs, load average" \
	"${load_before[0]} before the first round, $(loadavg) at the end"
echo
echo "one call of each guest, nothing else running:"
for g in slow loop sleep; do
	echo "  $(cat "$tmp/single-$g.out")"
done
echo
echo "native requests (latencies of the completed ones; a request still waiting when wrk stops is not counted):"
echo
echo "| native, c=$CONCURRENCY | alone req/s | beside req/s | ratio | alone p99 ms | beside p99 ms | ratio | errors |"
echo "|---|---|---|---|---|---|---|---|"
rps_ratios=() p99_ratios=() sum_alone=0 sum_beside=0
for i in "${!alone[@]}"; do
	read -r -a a <<<"${alone[$i]}"
	read -r -a b <<<"${beside[$i]}"
	# Latencies of a segment without a completed request mean nothing (wrk
	# prints 0): they show as "-", and so do their ratios.
	[ "${a[0]}" != 0 ] || a[3]=-
	[ "${b[0]}" != 0 ] || b[3]=-
	rr=$(raw "${b[1]}" "${a[1]}") p99r=-
	if [ "${a[0]}" != 0 ] && [ "${b[0]}" != 0 ]; then
		p99r=$(raw "${b[3]}" "${a[3]}")
	fi
	rps_ratios+=("$rr") p99_ratios+=("$p99r")
	sum_alone=$((sum_alone + a[0])) sum_beside=$((sum_beside + b[0]))
	table_row "round $((i / PAIRS + 1)), pair $((i % PAIRS + 1))" "${a[1]}" "${b[1]}" "$(shown "$rr")" \
		"${a[3]}" "${b[3]}" "$(shown "$p99r")" "$((a[4] + b[4]))"
done
rps_ratio=$(median "${rps_ratios[@]}")
p99_ratio=$(median "${p99_ratios[@]}")
table_row "median of the pairs" "" "" "$(shown "$rps_ratio")" "" "" "$(shown "$p99_ratio")" ""
echo
echo "all segments: $sum_alone requests alone, $sum_beside beside ($(shown "$(raw "$sum_beside" "$sum_alone")"));" \
	"the server's peak RSS $(IFS=,; echo "${peaks[*]}") MB"
echo
echo "the server's garbage collections and CPU time during wrk, per pair:"
for i in "${!alone[@]}"; do
	echo "  round $((i / PAIRS + 1)), pair $((i % PAIRS + 1)): alone ${notes_alone[$i]}; beside ${notes_beside[$i]}"
done
echo
echo "hostile requests over each round (c=$HOSTILE_C per guest, a connection starting at most one request" \
	"per $GAP while not paused):"
for r in $(seq "$ROUNDS"); do
	for g in "${guests[@]}"; do
		round=""
		[ "$ROUNDS" = 1 ] || round=" (round $r)"
		echo "  $(cat "$tmp/hammer-$g-$r.out")$round"
	done
done
echo
verdict=FAIL
if [ "$p99_ratio" != - ] && [ "$rps_ratio" != - ] &&
	awk -v r="$rps_ratio" -v p="$p99_ratio" 'BEGIN { exit !(r >= 0.9 && p <= 1.5) }'; then
	verdict=PASS
fi
echo "verdict: $verdict (median of $((ROUNDS * PAIRS)) pairs): native throughput beside hostile guests" \
	"$(shown "$rps_ratio") alone (target >= 0.9x), p99 $(shown "$p99_ratio") alone (target <= 1.5x)"
