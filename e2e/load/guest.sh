#!/usr/bin/env bash
# Load test of one WebAssembly step over HTTP: the native chain
# thumbnail 200x200 of 1080p JPEGs against the same chain plus
# t[]=duotone (wasm-sdk/examples/duotone, built from source), with wrk on
# loopback, one fresh server per cell, the variant cache off so every request
# renders, and peak RSS per cell with the filter pool warm.
#
#   e2e/load/guest.sh
#   DURATION=10 CONCURRENCY="4 16" e2e/load/guest.sh
#
# Environment: DURATION (seconds per cell, default 15), CONCURRENCY (default
# "4"), SOURCES (distinct sources, default 16), THREADS (wrk threads, default
# 2). The server is killed on exit.
set -euo pipefail

DURATION=${DURATION:-15}
CONCURRENCY=${CONCURRENCY:-4}
SOURCES=${SOURCES:-16}
THREADS=${THREADS:-2}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
command -v wrk >/dev/null || { echo "guest.sh: wrk is not installed (apt-get install wrk)" >&2; exit 1; }

. "$here/lib.sh"
load_init vitrine-guest-load
make -s -C "$root/wasm-sdk" go-examples >&2
mkdir -p "$tmp/filters/duotone"
cp "$root/wasm-sdk/examples/duotone/filter.json" "$root/wasm-sdk/examples/duotone/filter.wasm" "$tmp/filters/duotone/"
write_config "$tmp/config.yaml" false "filters:
  dir: $tmp/filters"
make_paths "$tmp/config.yaml"

for wl in thumb-1080p thumbduo-1080p; do
	for c in $CONCURRENCY; do
		# Warm every instance the filter's pool may start before measuring.
		run_cell "$wl" "$tmp/paths/$wl.paths" "$c" "$tmp/config.yaml" "$c"
	done
done

echo
echo "vitrine guest step load test: ${DURATION}s per cell, $SOURCES sources, wrk -t$THREADS, $(nproc) CPUs"
echo
echo "| workload | c | req/s | p50 ms | p99 ms | peak RSS MB | errors |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
