#!/usr/bin/env bash
# Upload latency with events off and on, and the delivery lag of webhooks.
# For each round, one fresh server per configuration (the order reversed
# every other round), each sent the same kind of traffic: SOURCES distinct
# JPEGs per size of SIZES (q90, generated per run), uploaded one after
# another by one client, each as soon as the one before was answered:
#
#   off    webhooks.enabled false and no topics: no events are written
#   hooks  3 webhook subscriptions (made with a signed POST /webhooks) to 3
#          receivers that answer at once, and a NATS topic
#          (nats://vitrine-bench?natsv2); skipped when no NATS server
#          answers at NATS_SERVER_URL
#   slow   1 subscription to a receiver that answers each delivery after
#          DELAY (webhooks.timeout 60s)
#
# and, when CONFIGS names them, the two halves of hooks: nats (the topic
# alone, webhooks off) and webhooks (the 3 subscriptions alone).
#
# Prints per configuration the upload latency's median, 90th and 99th
# percentile and the server's CPU time per upload (everything it did from
# start to stop, the deliveries included, over the uploads; and apart, the
# receivers' and the NATS server's, which share the machine), and where
# receivers answer at once, once every delivery arrived, the delivery lag
# (arrival at the receiver minus the event's time) and the events delivered
# per second from the first change to the last delivery (bounded here by
# the one client's upload rate); then, where events off ran, each other
# configuration's upload p50 and p99 over events off's, per round and the median
# round. Then, unless DRAIN=0, the outbox drain
# benchmark of storage (events/s; on PostgreSQL too with
# VITRINE_TEST_POSTGRES). Its numbers describe this machine only.
#
#   e2e/load/events.sh                   # 2 rounds, 200 1920x1080 sources
#   ROUNDS=4 SOURCES=100 SIZES=1080p,12mp e2e/load/events.sh
#   CONFIGS="off nats webhooks hooks" DRAIN=0 e2e/load/events.sh
#
# Environment: ROUNDS (default 2), SOURCES (default 200), SIZES (1080p,
# 12mp or both, comma-separated; default 1080p), CONFIGS (default "off
# hooks slow"), VARIATIONS (stored variations; default false, as their
# builder would run on after the uploads and blur the CPU time), DELAY
# (the slow receiver's, default 30s), NATS_SERVER_URL (default
# nats://127.0.0.1:4222), DRAIN (0: skip the drain benchmark), PPROF (an
# address: serve each server's profiles there, debug.pprofListen), KEEP
# (1: keep the temp directory), VITRINE_BIN (a binary to test instead of
# building the working tree). Traffic goes to 127.0.0.1 only.
set -euo pipefail

ROUNDS=${ROUNDS:-2}
SOURCES=${SOURCES:-200}
SIZES=${SIZES:-1080p}
DELAY=${DELAY:-30s}
CONFIGS=${CONFIGS:-off hooks slow}
VARIATIONS=${VARIATIONS:-false}
DRAIN=${DRAIN:-1}
PPROF=${PPROF:-}
KEEP=${KEEP:-0}
export NATS_SERVER_URL=${NATS_SERVER_URL:-nats://127.0.0.1:4222}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
load_init vitrine-events
rpid=""
hook_urls=()
trap 'stop_receiver; load_cleanup' EXIT

admin=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
secret=whsec_$(head -c 32 /dev/urandom | base64)
uploads=$((SOURCES * ($(tr -cd , <<<"$SIZES" | wc -c) + 1)))

configs=$CONFIGS
nats=${NATS_SERVER_URL#*://}
nats=${nats%%/*}
if ! timeout 2 bash -c "exec 3<>/dev/tcp/${nats%:*}/${nats##*:}" 2>/dev/null; then
	echo "no NATS server answers at $NATS_SERVER_URL (set NATS_SERVER_URL): skipping hooks and nats" >&2
	configs=$(tr ' ' '\n' <<<"$configs" | grep -vx -e hooks -e nats | tr '\n' ' ')
fi

# events_config file mode: the load key, an admin key for /webhooks, and
# the mode's events, webhooks and outbound sections.
events_config() {
	local topic="events:
  topics: [\"nats://vitrine-bench?natsv2\"]" allow="outbound:
  allow: [127.0.0.1]" extra
	case $2 in
	off) extra="webhooks:
  enabled: false" ;;
	nats) extra="$topic
webhooks:
  enabled: false" ;;
	webhooks) extra=$allow ;;
	hooks) extra="$topic
$allow" ;;
	slow) extra="webhooks:
  timeout: 60s
$allow" ;;
	esac
	cat >"$1" <<YAML
accessControl:
  keys:
    - publicKey: load
      privateKey: $priv
      rules: [{users: [load], group: read-write}]
    - publicKey: bench-admin
      privateKey: $admin
      rules: [{users: ["*"], group: all}]
cacheVariants: false
variations:
  enabled: $VARIATIONS
$extra${PPROF:+
debug:
  pprofListen: $PPROF}
YAML
}

# start_receiver n delay: gen -receiver on n free loopback ports, listed
# in $hook_urls; its statistics go to $tmp/stats when it stops.
start_receiver() {
	local addrs=() p
	hook_urls=()
	for _ in $(seq "$1"); do
		p=$("$tmp/gen" -free-port)
		addrs+=("127.0.0.1:$p")
		hook_urls+=("http://127.0.0.1:$p/hook")
	done
	rm -f "$tmp/stats"
	"$tmp/gen" -receiver "$(IFS=,; echo "${addrs[*]}")" -delay "$2" -secret "$secret" -stats "$tmp/stats" \
		>>"$tmp/receiver.log" 2>&1 &
	rpid=$!
	"$tmp/gen" -wait "http://${addrs[0]}/stats"
}

stop_receiver() {
	[ -n "$rpid" ] || return 0
	kill -TERM "$rpid" 2>/dev/null || true
	wait "$rpid" 2>/dev/null || true
	rpid=""
}

# subscribe url: a signed POST /webhooks for the load user's image events.
subscribe() {
	# shellcheck disable=SC2046 # vitrine sign prints arguments meant to split
	curl -sf -o /dev/null -H 'Content-Type: application/json' \
		-d "{\"url\": \"$1\", \"events\": [\"io.vitrine.image.*\"], \"users\": [\"load\"], \"secret\": \"$secret\"}" \
		$("$tmp/vitrine" sign --public bench-admin --private "$admin" --method POST "$base/webhooks") ||
		{ echo "POST /webhooks failed" >&2; exit 1; }
}

# wait_deliveries n: waits up to 2 minutes for n deliveries to arrive.
wait_deliveries() {
	local got
	for _ in $(seq 1200); do
		got=$(curl -sf "${hook_urls[0]%/hook}/stats" | awk '{ print $2 }')
		[ "${got:-0}" -lt "$1" ] || return 0
		sleep 0.1
	done
	echo "only $got of $1 deliveries arrived" >&2
}

# per_upload ms: ms over the uploads, as "x.y".
per_upload() {
	local v=$(($1 * 10 / uploads))
	echo "$((v / 10)).$((v % 10))"
}

# The NATS server's process, when one runs here: its CPU time is counted
# apart, as the receivers' is (they share the machine with the server).
nats_pid=$(pgrep -x nats-server | head -1 || true)

declare -A label=([off]="events off" [nats]="NATS topic" [webhooks]="3 webhooks"
	[hooks]="3 webhooks + NATS" [slow]="1 slow webhook ($DELAY)")
summary=()
declare -A pct # by percentile (p50, p99), round and mode: the first size's upload latency, ms
for round in $(seq "$ROUNDS"); do
	order=$configs
	[ $((round % 2)) = 1 ] || order=$(tr ' ' '\n' <<<"$configs" | tac | tr '\n' ' ')
	for mode in $order; do
		events_config "$tmp/$mode.yaml" "$mode"
		rm -rf "$tmp/data"
		start_server "$tmp/$mode.yaml"
		case $mode in
		hooks | webhooks) start_receiver 3 0s ;;
		slow) start_receiver 1 "$DELAY" ;;
		esac
		for u in ${hook_urls[@]+"${hook_urls[@]}"}; do subscribe "$u"; done
		cpu0=$(cpu_ms) rcpu0=$(cpu_ms "${rpid:-0}") ncpu0=$(cpu_ms "${nats_pid:-0}")
		"$tmp/gen" -url "$base" -user load -pub load -priv "$priv" -n "$SOURCES" -sizes "$SIZES" \
			-upload-latency >"$tmp/latency"
		case $mode in
		hooks | webhooks) wait_deliveries $((uploads * 3)) ;;
		esac
		cpu=$(per_upload $(($(cpu_ms) - cpu0)))
		others=""
		[ -z "$rpid" ] || others+=", receivers $(per_upload $(($(cpu_ms "$rpid") - rcpu0)))"
		case $mode in
		hooks | nats) [ -z "$nats_pid" ] || others+=", NATS server $(per_upload $(($(cpu_ms "$nats_pid") - ncpu0)))" ;;
		esac
		for q in p50 p99; do
			pct[$q,$round,$mode]=$(awk -v q=$q '{ for (i = 1; i < NF; i++) if ($i == q) { print $(i + 1); exit } }' "$tmp/latency")
		done
		while read -r line; do
			summary+=("round $round, ${label[$mode]}: $line, server CPU $cpu ms per upload$others")
			echo "${summary[-1]}" >&2
		done <"$tmp/latency"
		# The receiver first: a slow one would hold the server's stop.
		stop_receiver
		stop_server
		hook_urls=()
		case $mode in
		hooks | webhooks) summary+=("round $round, ${label[$mode]}: $(cat "$tmp/stats")") ;;
		slow) summary+=("round $round, ${label[$mode]}: $(awk '{ print $2 }' "$tmp/stats") deliveries arrived while the uploads ran") ;;
		*) continue ;;
		esac
		echo "${summary[-1]}" >&2
	done
done

echo
echo "Upload latency and webhook deliveries ($SOURCES sources per size of $SIZES, one client;"
echo "these numbers describe this machine only, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)):"
printf '%s\n' "${summary[@]}"

# Each round's configurations ran one after the other, seconds apart, the
# order reversed every other round: a round's ratio to events off compares
# little of the machine's drift, and the median round less.
if [[ " $configs " == *" off "* ]]; then
	echo
	for mode in $configs; do
		[ "$mode" != off ] || continue
		for q in p50 p99; do
			ratios=()
			for round in $(seq "$ROUNDS"); do
				ratios+=("$(raw "${pct[$q,$round,$mode]}" "${pct[$q,$round,off]}")")
			done
			echo "upload $q, ${label[$mode]} / events off, per round: $(for r in "${ratios[@]}"; do printf '%s ' "$(shown "$r")"; done)" \
				"median $(shown "$(median "${ratios[@]}")")"
		done
	done
fi

if [ "$DRAIN" != 0 ]; then
	echo
	echo "Outbox drain (go test ./storage -bench BenchmarkDrainEvents -benchtime 5x):"
	(cd "$root" && go test ./storage -run '^$' -bench BenchmarkDrainEvents -benchtime 5x) |
		grep -E '^Benchmark' || true
fi
