#!/usr/bin/env bash
# Upload latency with stored variations on and off: for each round, one fresh
# server with variations on and one with them off (in alternating order), each
# sent the same kind of traffic: SOURCES distinct 1920x1080 and SOURCES
# 4000x3000 JPEGs (q90, generated per run), uploaded one after another by one
# client, each as soon as the one before was answered, so the background
# build of the earlier uploads' copies runs while the later ones are
# answered. Prints the median, 90th and 99th percentile per size and mode.
# Its numbers describe this machine only.
#
#   e2e/load/upload.sh                   # 2 rounds, 16 sources per size
#   ROUNDS=3 SOURCES=32 e2e/load/upload.sh
#
# Environment: ROUNDS (default 2), SOURCES (default 16), KEEP (1: keep the
# temp directory), VITRINE_BIN (a binary to test instead of building the
# working tree). Traffic goes to 127.0.0.1 only.
set -euo pipefail

ROUNDS=${ROUNDS:-2}
SOURCES=${SOURCES:-16}
KEEP=${KEEP:-0}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
load_init vitrine-upload

for round in $(seq "$ROUNDS"); do
	modes="on off"
	[ $((round % 2)) = 1 ] || modes="off on"
	for mode in $modes; do
		enabled=true
		[ "$mode" = on ] || enabled=false
		write_config "$tmp/$mode.yaml" false "variations:
  enabled: $enabled"
		rm -rf "$tmp/data"
		start_server "$tmp/$mode.yaml"
		"$tmp/gen" -url "$base" -user load -pub load -priv "$priv" -n "$SOURCES" -upload-latency |
			sed "s/^/round $round, variations $mode: /"
		stop_server
	done
done
