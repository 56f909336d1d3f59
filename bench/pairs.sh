#!/usr/bin/env bash
# Runs ../shared/bench's storage comparison several times, side by side: each
# round starts a fresh pluginhost (bench/load-server.sh) for every binary in
# PH_BINS, then a fresh PocketBase (the shared peer-pocketbase.sh), and runs
# the load tool against each in turn. One line a round, then for each binary
# its median rate and its ratio to PocketBase's in every round:
#
#	PB_BIN=$HOME/go/bin/base bench/pairs.sh 6
#
# Before and after a change, in the same rounds (the machine's speed drifts
# between runs minutes apart, so compare rounds, not sittings):
#
#	PH_BINS="/tmp/before /tmp/after" PB_BIN=... bench/pairs.sh 6
#
# Settings, from the environment:
#   PH_BINS   pluginhost binaries, space-separated (default: one built from
#             this checkout)
#   PB_BIN    PocketBase's examples/base; PEER=none leaves the peer out
#   BENCH_DIR the shared bench folder (default: ../shared/bench beside this
#             repository); LOAD_BIN its load tool (default: built from it)
#   DURATION  of each run (10s), CLIENTS (32)
# Usage: bench/pairs.sh [ROUNDS]
set -euo pipefail
rounds=${1:-6}
root=$(cd "$(dirname "$0")/.." && pwd)
bench=${BENCH_DIR:-$root/../shared/bench}
duration=${DURATION:-10s}
clients=${CLIENTS:-32}
peer=${PEER:-pocketbase}
case $rounds in
'' | *[!0-9]* | 0) echo "pairs: ROUNDS must be a positive number, not \"$rounds\"" >&2; exit 2 ;;
esac
load=${LOAD_BIN:-}
if [ -z "$load" ] && [ ! -d "$bench/load" ]; then
	echo "pairs: no load tool in $bench/load: set BENCH_DIR or LOAD_BIN" >&2
	exit 2
fi
if [ "$peer" != none ]; then
	[ -f "$bench/peer-pocketbase.sh" ] || { echo "pairs: no $bench/peer-pocketbase.sh: set BENCH_DIR, or PEER=none" >&2; exit 2; }
	[ -x "${PB_BIN:-$(go env GOPATH)/bin/base}" ] || { echo "pairs: PocketBase missing: set PB_BIN (go install github.com/pocketbase/pocketbase/examples/base@VERSION), or PEER=none" >&2; exit 2; }
fi
work=$(mktemp -d)
echo "pairs: servers' files and logs in $work" >&2
if [ -z "$load" ]; then
	load=$work/load
	(cd "$bench/load" && go build -o "$load" .)
fi
read -r -a bins <<<"${PH_BINS:-}"
if [ ${#bins[@]} -eq 0 ]; then
	bins=("$work/pluginhost")
	(cd "$root" && go build -o "${bins[0]}" .)
fi

server=
stop() { # the server under way, if any, and waits for it to go
	if [ -n "$server" ]; then
		kill "$server" 2>/dev/null || true
		for _ in $(seq 100); do
			kill -0 "$server" 2>/dev/null || break
			sleep 0.1
		done
		server=
	fi
}

# run MODE START...: starts a server with START (it prints URL TOKENS IDS
# PID), loads it, stops it; prints "RATE P99" (updates/s, ms).
run() {
	local mode=$1 url tokens ids out
	shift
	trap stop EXIT # run runs in a subshell of its own
	read -r url tokens ids server < <("$@" 2>>"$work/servers.log") || true
	[ -n "$server" ] || { echo "pairs: $mode did not start: see $work/servers.log" >&2; exit 1; }
	out=$("$load" -mode "$mode" -url "$url" -token "$tokens" -ids "$ids" -c "$clients" -d "$duration" 2>&1 | tail -1) ||
		out="${out:-nothing} (its exit status was not 0)"
	stop
	# mode=ph ops=114155 ops/s=11416 p50=2.6ms p99=6.4ms errors=0
	awk -v out="$out" 'BEGIN {
		n = split(out, f, " ")
		for (i = 1; i <= n; i++) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
		if (v["ops/s"] == "" || v["errors"] != "0") { print "pairs: the load tool said: " out > "/dev/stderr"; exit 1 }
		p = v["p99"]
		if (sub(/ms$/, "", p)) p += 0
		else if (sub(/µs$/, "", p)) p /= 1000
		else if (sub(/s$/, "", p)) p *= 1000
		printf "%d %.1f\n", v["ops/s"], p
	}'
}

port=18180
for r in $(seq "$rounds"); do
	line="round $r:"
	for i in "${!bins[@]}"; do
		dir=$work/ph$i-$r
		mkdir -p "$dir"
		read -r rate p99 < <(run ph env PH_BIN="${bins[$i]}" LOAD_SERVER_DIR="$dir" bash "$root/bench/load-server.sh" $((port + i)))
		echo "$r $i $rate" >>"$work/ph"
		line="$line ${bins[$i]} $rate/s p99 $p99 ms ·"
	done
	if [ "$peer" != none ]; then
		read -r rate p99 < <(run pb bash "$bench/peer-pocketbase.sh" $((port + 99)))
		echo "$r $rate" >>"$work/pb"
		line="$line pocketbase $rate/s p99 $p99 ms"
	fi
	echo "${line% ·}"
done

# For each binary: the median rate, and the ratio to the peer in each round.
for i in "${!bins[@]}"; do
	awk -v i="$i" -v bin="${bins[$i]}" -v peerfile="$work/pb" '
		BEGIN { while ((getline l < peerfile) > 0) { split(l, f, " "); pb[f[1]] = f[2] } }
		$2 == i { n++; rate[n] = $3; round[n] = $1 }
		END {
			line = bin ":"
			for (k = 1; k <= n; k++) { # insertion sort: mawk has no asort
				for (j = k; j > 1 && sorted[j - 1] > rate[k]; j--) sorted[j] = sorted[j - 1]
				sorted[j] = rate[k]
			}
			median = n % 2 ? sorted[(n + 1) / 2] : (sorted[n / 2] + sorted[n / 2 + 1]) / 2
			line = line sprintf(" median %d updates/s", median)
			if (length(pb) > 0) {
				met = 0
				ratios = ""
				for (k = 1; k <= n; k++) {
					x = rate[k] / pb[round[k]]
					ratios = ratios sprintf("%s%.2f", k > 1 ? ", " : "", x)
					if (x >= 4) met++
				}
				line = line sprintf("; against PocketBase %sx (4x or more in %d of %d)", ratios, met, n)
			}
			print line
		}' "$work/ph"
done
