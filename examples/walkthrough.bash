# Helpers for the README's walk-through. Load them into an interactive bash
# at the repository root:
#
#   source examples/walkthrough.bash
#
# Each helper stops loudly: the first failure prints WALK-THROUGH STOPPED with
# its reason, and every later helper says it was skipped instead of carrying
# on, until the helpers are loaded again (step 1). Nothing here exits the
# shell. Everything the walk-through makes goes to $WT (./walkthrough).

WT=./walkthrough
WT_FAILED=
URL=
TOKEN=

# fail records the first failure and says so loudly; it always fails.
fail() {
  if [ -z "$WT_FAILED" ]; then
    WT_FAILED=$*
    printf '\n*** WALK-THROUGH STOPPED: %s\n*** Fix the cause, then start again at step 1.\n\n' "$*" >&2
  fi
  return 1
}

# skipped says so and succeeds when an earlier step failed.
skipped() {
  [ -n "$WT_FAILED" ] || return 1
  printf -- '--- skipped (%s): an earlier step failed: %s\n' "$1" "$WT_FAILED" >&2
}

# run COMMAND [ARG...] runs a command; a failure stops the walk-through.
run() {
  skipped "$1" && return 1
  "$@" || fail "$* (exit status $?)"
}

# keep VAR COMMAND [ARG...] runs a command and keeps what it prints in VAR.
keep() {
  local var=$1 out
  shift
  skipped "$var" && return 1
  out=$("$@") || { fail "$*: it failed, so $var is not set"; return 1; }
  [ -n "$out" ] || { fail "$*: it printed nothing, so $var is not set"; return 1; }
  printf -v "$var" '%s' "$out"
  echo "$var is set (${#out} characters)"
}

# answer NAME prints the first string field NAME of the last answer.
answer() {
  local v
  v=$(grep -o "\"$1\":\"[^\"]*\"" "$WT/answer.json" 2>/dev/null | head -n 1 | cut -d '"' -f 4)
  [ -n "$v" ] || { echo "the last answer has no \"$1\"" >&2; return 1; }
  printf '%s\n' "$v"
}

# json_string prints its argument as a JSON string.
json_string() {
  printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr '\n\t\r' '   ')"
}

# start_server COMMAND [ARG...] starts the server in the background with its
# log in $WT/server.log, waits for the address it listens on (give it
# --addr 127.0.0.1:0 and the system picks a free port) and sets URL.
start_server() {
  skipped "start the server" && return 1
  stop_pluginhost
  mkdir -p "$WT"
  : >"$WT/server.log" # there before the job opens it, for the first read below
  "$@" >>"$WT/server.log" 2>&1 &
  local pid=$! addr i
  disown "$pid" 2>/dev/null
  echo "$pid" >"$WT/server.pid"
  for i in $(seq 300); do
    addr=$(sed -n 's/.*msg="pluginhost serving" addr=\([^ ]*\).*/\1/p' "$WT/server.log")
    if [ -n "$addr" ]; then
      URL=http://$addr
      echo "server listening at $URL (pid $pid, log in $WT/server.log)"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$WT/server.log" >&2
  stop_server
  fail "the server did not start (its log is above)"
}

# start_weather starts the example weather service (cmd/weatherd, built as
# $1) in the background on a free port, its CA written to
# $WT/weather-ca.pem, and sets WEATHER_URL and WEATHER_KEY from what it
# prints.
start_weather() {
  skipped "start the weather service" && return 1
  mkdir -p "$WT"
  : >"$WT/weather.log" # there before the job opens it, for the first read below
  "$1" --addr 127.0.0.1:0 --ca "$WT/weather-ca.pem" >>"$WT/weather.log" 2>&1 &
  local pid=$! i
  disown "$pid" 2>/dev/null
  echo "$pid" >"$WT/weather.pid"
  for i in $(seq 300); do
    WEATHER_URL=$(sed -n 's/^weather service listening at \(.*\)$/\1/p' "$WT/weather.log")
    WEATHER_KEY=$(sed -n 's/^API key: \(.*\)$/\1/p' "$WT/weather.log")
    if [ -n "$WEATHER_URL" ] && [ -n "$WEATHER_KEY" ]; then
      WEATHER_PORT=${WEATHER_URL##*:}
      echo "weather service at $WEATHER_URL (pid $pid), its CA in $WT/weather-ca.pem"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$WT/weather.log" >&2
  fail "the weather service did not start (its log is above)"
}

# stop_server stops the server started by start_server (and the weather
# service of start_weather), here or in an earlier shell, and waits for it
# to exit. It runs even after a failure.
stop_server() {
  local pid
  pid=$(cat "$WT/weather.pid" 2>/dev/null) && {
    rm -f "$WT/weather.pid"
    case $(ps -o comm= -p "$pid" 2>/dev/null || cat "/proc/$pid/comm" 2>/dev/null) in
    weatherd*) kill "$pid" && echo "weather service stopped (pid $pid)" ;;
    esac
  }
  stop_pluginhost
}

# stop_pluginhost stops the server alone.
stop_pluginhost() {
  local pid i
  pid=$(cat "$WT/server.pid" 2>/dev/null) || return 0
  rm -f "$WT/server.pid"
  case $(ps -o comm= -p "$pid" 2>/dev/null || cat "/proc/$pid/comm" 2>/dev/null) in
  pluginhost*) ;;
  *) return 0 ;;
  esac
  kill "$pid"
  for i in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "server stopped (pid $pid)"
}

# api METHOD PATH [BODY_FILE] [ERROR_CODE] calls the server with the bearer
# token and prints the answer. Any HTTP or GraphQL error stops the
# walk-through, except the error code when one is expected.
api() {
  local method=$1 path=$2 body=${3:-} expect=${4:-} status
  skipped "$method $path" && return 1
  [ -n "$URL" ] || { fail "$method $path: no server (start it first)"; return 1; }
  [ -n "$TOKEN" ] || { fail "$method $path: no TOKEN (create it first)"; return 1; }
  local args=(-sS -X "$method" -o "$WT/answer.json" -w '%{http_code}' -H "Authorization: Bearer $TOKEN")
  if [ -n "$body" ]; then
    args+=(-H 'Content-Type: application/json' --data-binary "@$body")
  fi
  status=$(curl "${args[@]}" "$URL$path") || { fail "$method $path: the server did not answer (see $WT/server.log)"; return 1; }
  cat "$WT/answer.json"
  echo
  if [ -n "$expect" ]; then
    if grep -q "\"code\":\"$expect\"" "$WT/answer.json"; then
      echo "(refused with $expect, as expected)"
      return 0
    fi
    fail "$method $path: expected the error $expect, got HTTP $status and the answer above"
    return 1
  fi
  if [ "$status" != 200 ] || grep -q '"errors":' "$WT/answer.json"; then
    fail "$method $path: HTTP $status with the error above"
    return 1
  fi
}

# gql [--expect CODE] OPERATION [NAME=text | NAME:=JSON]... posts one GraphQL
# operation with its variables to /graphql.
gql() {
  local expect= query vars= sep= arg name value
  if [ "$1" = --expect ]; then
    expect=$2
    shift 2
  fi
  skipped "gql" && return 1
  query=$1
  shift
  for arg in "$@"; do
    case $arg in
    *:=*) name=${arg%%:=*} value=${arg#*:=} ;;
    *=*) name=${arg%%=*} value=$(json_string "${arg#*=}") ;;
    *)
      fail "gql: $arg is neither NAME=text nor NAME:=JSON"
      return 1
      ;;
    esac
    vars=$vars$sep\"$name\":$value
    sep=,
  done
  mkdir -p "$WT"
  printf '{"query":%s,"variables":{%s}}' "$(json_string "$query")" "$vars" >"$WT/request.json"
  api POST /graphql "$WT/request.json" "$expect"
}

# wait_for TEXT SECONDS OPERATION [NAME=text | NAME:=JSON]... repeats a
# GraphQL query once a second until its answer holds TEXT, and prints that
# answer; after SECONDS without it the walk-through stops.
wait_for() {
  local text=$1 seconds=$2 i
  shift 2
  skipped "wait for $text" && return 1
  for i in $(seq "$seconds"); do
    gql "$@" >/dev/null || { cat "$WT/answer.json" >&2; echo >&2; return 1; }
    if grep -q -- "$text" "$WT/answer.json"; then
      cat "$WT/answer.json"
      echo
      echo "($text appeared after about $((i - 1)) s)"
      return 0
    fi
    sleep 1
  done
  fail "waited $seconds s and $text never appeared; the last answer is in $WT/answer.json"
}

# rest METHOD PATH calls a REST endpoint.
rest() { api "$1" "$2"; }

# finish says whether every step worked.
finish() {
  if [ -n "$WT_FAILED" ]; then
    printf '\n*** WALK-THROUGH STOPPED earlier: %s\n' "$WT_FAILED" >&2
    return 1
  fi
  printf '\nWALK-THROUGH DONE: every step worked.\n'
}

echo "walk-through helpers loaded: run, keep, answer, gql, wait_for, rest, start_server, stop_server, finish"
