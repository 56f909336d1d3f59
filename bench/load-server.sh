#!/usr/bin/env bash
# Starts pluginhost for ../shared/bench's load tool, the way peer-pocketbase.sh
# starts the peer: a fresh SQLite database and data folder, 32 users, each
# with a bearer token and one Instance of a plugin with one storage
# namespace. Prints "URL TOKENS IDS PID" (TOKENS and IDS comma-separated, the
# w-th token owning the w-th Instance), then:
#
#	read URL TOKENS IDS PID < <(bench/load-server.sh 8080)
#	benchload -mode ph -url $URL -token $TOKENS -ids $IDS -c 32 -d 10s
#	kill $PID
#
# The binary is $PH_BIN, or built from this checkout. The server's files
# (database, keys, log) go to $LOAD_SERVER_DIR, or a new temporary folder,
# named on standard error.
# Usage: bench/load-server.sh [PORT]
set -euo pipefail
port=${1:-8080}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${LOAD_SERVER_DIR:-$(mktemp -d)}
ph=${PH_BIN:-}
if [ -z "$ph" ]; then
	ph=$dir/pluginhost
	(cd "$root" && go build -o "$ph" .)
fi
db="sqlite:$dir/pluginhost.db"
url=http://127.0.0.1:$port

"$ph" keygen --out "$dir/publisher" >/dev/null
mkdir -p "$dir/keys" "$dir/plugin"
cp "$dir/publisher.pub" "$dir/keys/"
cat >"$dir/plugin/manifest.json" <<'EOF'
{"id": "com.bench.load", "name": "Load", "version": "1.0.0", "schema_version": 2,
 "permissions": ["storage"], "data_policy": "retain",
 "storage": {"version": 1, "namespaces": [{"id": "n", "max_bytes": 65536}]}}
EOF
"$ph" package --dir "$dir/plugin" --key "$dir/publisher.key" --out "$dir/plugin.pkg" >/dev/null
tokens=()
for i in $(seq 1 32); do
	tokens+=("$("$ph" token create --db "$db" --user "load$i" 2>/dev/null)")
done

"$ph" serve --addr 127.0.0.1:$port --db "$db" --data-dir "$dir" --trusted-keys "$dir/keys" >"$dir/log" 2>&1 &
pid=$!
fail() { echo "pluginhost: $*" >&2; kill $pid; exit 1; }
echo "pluginhost: pid $pid, files and log in $dir" >&2
for _ in $(seq 300); do
	curl -fs "$url/readyz" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fs "$url/readyz" >/dev/null || fail "did not start: see $dir/log"

gql() { # TOKEN QUERY VARIABLES FIELD: prints the id of the answer's data.FIELD, or fails
	local answer
	answer=$(curl -fsS "$url/graphql" -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
		-d "{\"query\":\"$2\",\"variables\":$3}") || fail "$2: the request failed"
	jq -e '.errors == null' <<<"$answer" >/dev/null || fail "$2: $answer"
	jq -r ".data.$4.id" <<<"$answer"
}
pkg=$(base64 -w0 "$dir/plugin.pkg")
ids=()
for t in "${tokens[@]}"; do
	inl=$(gql "$t" 'mutation($p:String!){installPlugin(package:$p){id}}' "{\"p\":\"$pkg\"}" installPlugin)
	inst=$(gql "$t" 'mutation($i:ID!){createInstance(installationId:$i){id}}' "{\"i\":\"$inl\"}" createInstance)
	ids+=("$inst")
done
echo "$url $(IFS=,; echo "${tokens[*]}") $(IFS=,; echo "${ids[*]}") $pid"
