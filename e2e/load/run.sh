#!/usr/bin/env bash
# Load test of the vitrine binary alone with wrk on loopback, in the shape of
# the side-by-side comparison in e2e/README.md's Performance section: JPEG sources
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

. "$here/lib.sh"
load_init vitrine-load
write_config "$tmp/nocache.yaml" false
write_config "$tmp/cache.yaml" true
make_paths "$tmp/nocache.yaml"

for wl in thumb-1080p thumb-12mp w800-1080p w800-12mp; do
	[[ $wl =~ $WORKLOADS ]] || continue
	for c in $CONCURRENCY; do
		run_cell "$wl" "$tmp/paths/$wl.paths" "$c" "$tmp/nocache.yaml" 1
	done
done
if [ "$CACHE_CELL" = 1 ]; then
	head -1 "$tmp/paths/thumb-1080p.paths" >"$tmp/paths/repeat.paths"
	run_cell "thumb-1080p cache hit, 1 URL" "$tmp/paths/repeat.paths" 16 "$tmp/cache.yaml" 1
fi

echo
echo "vitrine load test: ${DURATION}s per cell, $SOURCES distinct sources per size, wrk -t$THREADS," \
	"$(nproc) CPUs, MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-unset}"
echo
echo "| workload | c | req/s | p50 ms | p99 ms | peak RSS MB | errors |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
