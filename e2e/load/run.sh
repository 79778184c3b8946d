#!/usr/bin/env bash
# Load test of the vitrine binary alone with wrk on loopback, in the shape of
# the side-by-side comparison in README.md's Performance section: JPEG sources
# on local disk, q80 JPEG output, one fresh server per cell (so peak RSS is per
# cell), distinct sources for the requests in flight, the variant cache off so
# every request renders. Its numbers describe this machine only: compare them
# with numbers taken in the same run, never with another machine's.
#
#   e2e/load/run.sh                      # every cell, 20 s each
#   DURATION=10 CONCURRENCY="16" e2e/load/run.sh
#   WORKLOADS='thumb-1080p' e2e/load/run.sh   # a regexp over workload names
#   MALLOC_ARENA_MAX=2 e2e/load/run.sh   # the server inherits the environment
#
# Environment: DURATION (seconds per cell, default 20), CONCURRENCY (default
# "4 16"), SOURCES (distinct sources per size, default 32), THREADS (wrk
# threads, default 2), WORKLOADS (regexp, default all), CACHE_CELL (1: also
# measure cache hits on one repeated URL; default 1), KEEP (1: keep the temp
# directory), VITRINE_BIN (a binary to test instead of building the
# working tree). Traffic goes to 127.0.0.1 only; the server is killed on exit.
set -euo pipefail

DURATION=${DURATION:-20}
CONCURRENCY=${CONCURRENCY:-"4 16"}
SOURCES=${SOURCES:-32}
THREADS=${THREADS:-2}
WORKLOADS=${WORKLOADS:-.}
CACHE_CELL=${CACHE_CELL:-1}
KEEP=${KEEP:-0}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

if ! command -v wrk >/dev/null; then
	echo "installing wrk (apt)" >&2
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get install -y -qq wrk >/dev/null 2>&1 ||
		{ $sudo apt-get update -qq && $sudo apt-get install -y -qq wrk >/dev/null; }
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vitrine-load.XXXXXX")
pid=""
stop_server() {
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=""
}
cleanup() {
	stop_server
	if [ "$KEEP" = 1 ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "building into $tmp" >&2
if [ -n "${VITRINE_BIN:-}" ]; then
	cp "$VITRINE_BIN" "$tmp/vitrine"
else
	(cd "$root" && go build -o "$tmp/vitrine" .)
fi
(cd "$root" && go build -o "$tmp/gen" ./e2e/load/gen)

port=$("$tmp/gen" -free-port)
base="http://127.0.0.1:$port"
priv=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
write_config() { # file cacheVariants
	cat >"$1" <<EOF
accessControl:
  keys:
    - publicKey: load
      privateKey: $priv
      rules:
        - users: [load]
          group: read-write
cacheVariants: $2
EOF
}
write_config "$tmp/nocache.yaml" false
write_config "$tmp/cache.yaml" true

start_server() { # config
	"$tmp/vitrine" serve --config "$1" --data "$tmp/data" --listen "127.0.0.1:$port" \
		>>"$tmp/server.log" 2>&1 &
	pid=$!
	"$tmp/gen" -wait "$base/status" || { tail -20 "$tmp/server.log" >&2; exit 1; }
}

peak_rss_mb() {
	awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status"
}

start_server "$tmp/nocache.yaml"
"$tmp/gen" -url "$base" -user load -pub load -priv "$priv" -n "$SOURCES" -out "$tmp/paths"
stop_server

rows=()
run_cell() { # label paths-file concurrency config
	local label=$1 paths=$2 c=$3 config=$4 threads=$THREADS out
	[ "$threads" -le "$c" ] || threads=$c
	start_server "$config"
	curl -sfg -o /dev/null "$base$(head -1 "$paths")" # one warm-up request
	out=$(WRK_PATHS="$paths" WRK_THREADS="$threads" wrk -t"$threads" -c"$c" -d"${DURATION}s" \
		--timeout 30s --latency -s "$here/cycle.lua" "$base")
	local rss
	rss=$(peak_rss_mb)
	stop_server
	echo "$out" >>"$tmp/wrk.log"
	read -r _ _ rps p50 p99 non2xx sockerr < <(grep '^RESULT' <<<"$out")
	rows+=("| $label | $c | $rps | $p50 | $p99 | $rss | $((non2xx + sockerr)) |")
	echo "${rows[-1]}" >&2
}

for wl in thumb-1080p thumb-12mp w800-1080p w800-12mp; do
	[[ $wl =~ $WORKLOADS ]] || continue
	for c in $CONCURRENCY; do
		run_cell "$wl" "$tmp/paths/$wl.paths" "$c" "$tmp/nocache.yaml"
	done
done
if [ "$CACHE_CELL" = 1 ]; then
	head -1 "$tmp/paths/thumb-1080p.paths" >"$tmp/paths/repeat.paths"
	run_cell "thumb-1080p cache hit, 1 URL" "$tmp/paths/repeat.paths" 16 "$tmp/cache.yaml"
fi

echo
echo "vitrine load test: ${DURATION}s per cell, $SOURCES distinct sources per size, wrk -t$THREADS," \
	"$(nproc) CPUs, MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-unset}"
echo
echo "| workload | c | req/s | p50 ms | p99 ms | peak RSS MB | errors |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
