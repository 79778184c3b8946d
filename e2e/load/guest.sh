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

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vitrine-guest-load.XXXXXX")
pid=""
stop_server() {
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=""
}
trap 'stop_server; rm -rf "$tmp"' EXIT

(cd "$root" && go build -o "$tmp/vitrine" . && go build -o "$tmp/gen" ./e2e/load/gen)
make -s -C "$root/wasm-sdk" go-examples >&2
mkdir -p "$tmp/filters/duotone"
cp "$root/wasm-sdk/examples/duotone/filter.json" "$root/wasm-sdk/examples/duotone/filter.wasm" "$tmp/filters/duotone/"

port=$("$tmp/gen" -free-port)
base="http://127.0.0.1:$port"
priv=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$tmp/config.yaml" <<YAML
cacheVariants: false
filters:
  dir: $tmp/filters
accessControl:
  keys:
    - publicKey: load
      privateKey: $priv
      rules:
        - users: [load]
          group: read-write
YAML
start_server() {
	"$tmp/vitrine" serve --config "$tmp/config.yaml" --data "$tmp/data" --listen "127.0.0.1:$port" \
		>>"$tmp/server.log" 2>&1 &
	pid=$!
	"$tmp/gen" -wait "$base/status" || { tail -20 "$tmp/server.log" >&2; exit 1; }
}

start_server
"$tmp/gen" -url "$base" -user load -pub load -priv "$priv" -n "$SOURCES" -out "$tmp/paths"
stop_server

rows=()
for wl in thumb-1080p thumbduo-1080p; do
	for c in $CONCURRENCY; do
		threads=$THREADS
		[ "$threads" -le "$c" ] || threads=$c
		start_server
		# Warm every instance the pool may start before measuring.
		warm=()
		for p in $(head -"$c" "$tmp/paths/$wl.paths"); do
			curl -sfg -o /dev/null "$base$p" &
			warm+=($!)
		done
		wait "${warm[@]}"
		out=$(WRK_PATHS="$tmp/paths/$wl.paths" WRK_THREADS="$threads" wrk -t"$threads" -c"$c" \
			-d"${DURATION}s" --timeout 30s --latency -s "$here/cycle.lua" "$base")
		rss=$(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status")
		stop_server
		read -r _ _ rps p50 p99 non2xx sockerr < <(grep '^RESULT' <<<"$out")
		rows+=("| $wl | $c | $rps | $p50 | $p99 | $rss | $((non2xx + sockerr)) |")
		echo "${rows[-1]}" >&2
	done
done

echo
echo "vitrine guest step load test: ${DURATION}s per cell, $SOURCES sources, wrk -t$THREADS, $(nproc) CPUs"
echo
echo "| workload | c | req/s | p50 ms | p99 ms | peak RSS MB | errors |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
