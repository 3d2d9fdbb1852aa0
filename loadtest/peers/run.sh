#!/usr/bin/env bash
# Runs one peer benchmark: starts the server, drives it, stops it, prints the summary.
#
#   loadtest/peers/run.sh <boardgameio|colyseus> --matches N --seconds S --out FILE
#       [--ramp-seconds R] [--server-cpu CPU] [--driver-cpu CPU] [--port PORT]
#       [--seed SEED] [--diag-out FILE]
#
# --server-cpu pins the server process with `taskset -c CPU`, --driver-cpu
# the driver. Server and driver run with NODE_ENV=production (boardgame.io
# skips its per-move serializability check and its INFO logging there).
set -euo pipefail

usage() {
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 64
}

[ $# -ge 1 ] || usage
peer=$1; shift
case "$peer" in
  boardgameio) server_js=boardgameio-server.mjs; default_port=8000; scheme=http ;;
  colyseus)    server_js=colyseus-server.mjs;    default_port=2567; scheme=ws ;;
  *) usage ;;
esac

matches=10 seconds=20 out= ramp= server_cpu= driver_cpu= port=$default_port seed= diag_out=
while [ $# -gt 0 ]; do
  case "$1" in
    --matches) matches=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --ramp-seconds) ramp=$2; shift 2 ;;
    --server-cpu) server_cpu=$2; shift 2 ;;
    --driver-cpu) driver_cpu=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --diag-out) diag_out=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "run.sh: unknown argument $1" >&2; usage ;;
  esac
done
[ -n "$out" ] || { echo "run.sh: --out is required" >&2; exit 64; }
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
if [ -n "$diag_out" ]; then case "$diag_out" in /*) ;; *) diag_out="$PWD/$diag_out" ;; esac; fi

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

if [ ! -d node_modules ]; then
  echo "run.sh: installing pinned packages (npm ci)" >&2
  npm ci --no-audit --no-fund >&2
fi

if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "run.sh: port $port is already in use" >&2
  exit 1
fi

server_log=$(mktemp "${TMPDIR:-/tmp}/peer-$peer-server.XXXXXX.log")
server_cmd=(node "$server_js" --port "$port" --host 127.0.0.1)
[ -n "$server_cpu" ] && server_cmd=(taskset -c "$server_cpu" "${server_cmd[@]}")

NODE_ENV=production "${server_cmd[@]}" >"$server_log" 2>&1 &
server_pid=$!   # taskset execs node, so this is the server's own PID

stop_server() {
  if kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server_pid" 2>/dev/null || true
  fi
  wait "$server_pid" 2>/dev/null || true
}
trap stop_server EXIT

for _ in $(seq 300); do
  grep -q 'listening' "$server_log" && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "run.sh: server exited before listening:" >&2; cat "$server_log" >&2; exit 1
  fi
  sleep 0.1
done
grep -q 'listening' "$server_log" || { echo "run.sh: server did not report listening in 30 s" >&2; cat "$server_log" >&2; exit 1; }
grep 'listening' "$server_log" >&2

driver_cmd=(node driver.mjs --server "$peer" --url "$scheme://127.0.0.1:$port"
  --matches "$matches" --seconds "$seconds" --server-pid "$server_pid" --out "$out")
[ -n "$ramp" ] && driver_cmd+=(--ramp-seconds "$ramp")
[ -n "$seed" ] && driver_cmd+=(--seed "$seed")
[ -n "$diag_out" ] && driver_cmd+=(--diag-out "$diag_out")
[ -n "$driver_cpu" ] && driver_cmd=(taskset -c "$driver_cpu" "${driver_cmd[@]}")

rc=0
NODE_ENV=production "${driver_cmd[@]}" || rc=$?

if ! kill -0 "$server_pid" 2>/dev/null; then
  echo "run.sh: server died during the run; its log:" >&2; tail -50 "$server_log" >&2; rc=1
elif [ -s "$server_log" ] && [ "$(wc -l <"$server_log")" -gt 1 ]; then
  echo "run.sh: server log ($server_log), last lines:" >&2; tail -5 "$server_log" >&2
fi
stop_server
trap - EXIT

[ -f "$out" ] && cat "$out"
[ "$rc" -eq 0 ] && rm -f "$server_log"
exit "$rc"
