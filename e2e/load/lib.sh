# Sourced by the load scripts here: a temp directory with the binaries, one
# vitrine at a time on a free loopback port, its config, one wrk cell, and
# the ratios and medians their reports print.
# The sourcing script sets here (its directory), root (the checkout),
# DURATION and THREADS; KEEP=1 keeps the temp directory.

# load_init prefix: makes $tmp, builds vitrine (or copies $VITRINE_BIN) and
# the generator into it, and picks $port, $base and the key $priv.
load_init() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	pid=""
	trap load_cleanup EXIT
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
}

load_cleanup() {
	[ -z "${wrk_pid:-}" ] || kill -TERM "$wrk_pid" 2>/dev/null || true
	stop_server
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}

# write_config file cacheVariants [yaml]: the load user's key, the variant
# cache on or off, and any further top-level yaml.
write_config() {
	cat >"$1" <<YAML
accessControl:
  keys:
    - publicKey: load
      privateKey: $priv
      rules:
        - users: [load]
          group: read-write
cacheVariants: $2
${3:-}
YAML
}

start_server() { # config
	"$tmp/vitrine" serve --config "$1" --data "$tmp/data" --listen "127.0.0.1:$port" \
		>>"$tmp/server.log" 2>&1 &
	pid=$!
	"$tmp/gen" -wait "$base/status" || { tail -20 "$tmp/server.log" >&2; exit 1; }
}

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

# make_paths config: uploads $SOURCES sources per size through a server on
# config and writes the request targets of every workload to $tmp/paths.
make_paths() {
	start_server "$1"
	"$tmp/gen" -url "$base" -user load -pub load -priv "$priv" -n "$SOURCES" -out "$tmp/paths"
	stop_server
}

# run_cell label paths-file concurrency config warm: one fresh server, warm
# requests in parallel (the first targets of paths), then wrk for DURATION;
# appends a table row (req/s, p50, p99, peak RSS, errors) to rows.
rows=()
run_cell() {
	local label=$1 paths=$2 c=$3 config=$4 warm=$5 rss
	start_server "$config"
	warm_up "$paths" "$warm"
	measure "$paths" "$c"
	rss=$(peak_rss)
	stop_server
	rows+=("| $label | $c | $rps | $p50 | $p99 | $rss | $errors |")
	echo "${rows[-1]}" >&2
}

# warm_up paths-file n: the first n targets of paths, in parallel.
warm_up() {
	local pids=() p
	for p in $(head -"$2" "$1"); do
		curl -sfg -o /dev/null "$base$p" &
		pids+=($!)
	done
	[ "${#pids[@]}" = 0 ] || wait "${pids[@]}"
}

# measure paths-file concurrency: wrk for DURATION against the running
# server (or $wrk_url), cycling through paths with cycle.lua (or
# $wrk_script); sets requests (completed), rps, p50, p99 (ms), errors
# (non-2xx and socket errors), and hits and wrapped when the script reports
# them (mixed.lua), and appends wrk's report to wrk.log.
measure() {
	local threads=$THREADS out non2xx sockerr
	[ "$threads" -le "$2" ] || threads=$2
	# In the background, so that a signal to the script ends it (and wrk, in
	# load_cleanup) at once rather than when wrk is done.
	WRK_PATHS="$1" WRK_THREADS="$threads" wrk -t"$threads" -c"$2" -d"${DURATION}s" \
		--timeout 30s --latency -s "${wrk_script:-$here/cycle.lua}" "${wrk_url:-$base}" >"$tmp/wrk.out" &
	wrk_pid=$!
	wait "$wrk_pid"
	wrk_pid=""
	out=$(<"$tmp/wrk.out")
	echo "$out" >>"$tmp/wrk.log"
	hits="" wrapped=""
	read -r _ requests rps p50 p99 non2xx sockerr hits wrapped < <(grep '^RESULT' <<<"$out")
	errors=$((non2xx + sockerr))
}

# peak_rss: the running server's peak resident set, MB; a server that is
# gone ends the script with the end of its log.
peak_rss() {
	if [ ! -e "/proc/$pid/status" ]; then
		echo "the server (pid $pid) exited during the measurement; its log ends:" >&2
		tail -30 "$tmp/server.log" >&2
		exit 1
	fi
	awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status"
}

# cpu_ms [pid]: the CPU time so far (user and system, of every thread,
# those that ended included) of the running server or of pid, ms; 0 when
# there is no such process.
cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.0f", ($14 + $15) * 1000 / hz }' "/proc/${1:-$pid}/stat" 2>/dev/null || echo 0
}

# ratio a b: a / b as 1.23x (0.012x below 0.1), - when b is 0.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "-"; else printf (a / b < 0.1 ? "%.3fx" : "%.2fx"), a / b }'
}
# raw a b: a / b to four places, - when b is 0 (what the verdict compares).
raw() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "-"; else printf "%.4f", a / b }'
}
# median values...: the median (the mean of the middle two of an even
# count) to four places, - when any value is -.
median() {
	printf '%s\n' "$@" | sort -g | awk '
		/^-$/ { dash = 1 } { v[NR] = $1 }
		END { if (dash || NR == 0) { print "-"; exit }
			printf "%.4f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# shown r: a raw ratio as ratio shows it.
shown() {
	[ "$1" != - ] || { echo -; return; }
	ratio "$1" 1
}
