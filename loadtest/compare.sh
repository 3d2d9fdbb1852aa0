#!/usr/bin/env bash
# Ours and theirs in one run, on this machine, and the comparison table written into
# docs/benchmarks.md (between the `loadtest:comparison` markers) with the date and versions.
#
#   loadtest/compare.sh [--matches N] [--seconds S] [--ramp-seconds R]
#                       [--only aio,aio-memory,cluster,boardgameio,colyseus] [--bin DIR]
#
# The same workload everywhere: N concurrent Conecta 4 matches, two connections per match
# (one per player), a random legal move as soon as a player may move, a finished match
# replaced by a new one; S measured seconds after R seconds of ramp-up.
#   aio         `juegoland dev` (all-in-one, embedded SQLite store, every move durable)
#   aio-memory  `juegoland dev --in-memory`: the same process with nothing durable, the
#               floor of our per-move cost without storage (for the analysis, not a target)
#   cluster     `juegoland cluster` (2 nodes, router, gateway, scheduler) on PostgreSQL and
#               Redis (127.0.0.1:5432 database test, 127.0.0.1:6379), every move durable
# Rows run only when named in --only (for the analysis of issue 19's designs):
#   aio-pg      `juegoland dev` on PostgreSQL: the engine and the store in one process, the
#               bound of a cluster whose clients are served by their match's owner
#   cluster-near `juegoland cluster` (2 nodes, router, scheduler) whose nodes serve clients
#               themselves (`--node-edge-port`), each player connecting to its match's owner
#               (`--ws-owner`, the platform API's `clientUrl`): the owner-served path
#   boardgameio, colyseus   loadtest/peers/ (in memory), driven by loadtest/peers/driver.mjs
# Server CPU counts every server-side process: ours + PostgreSQL + Redis for the cluster.
# --bin DIR runs the `juegoland` and `juegoland-loadtest` binaries in DIR (e.g. a copy of
# target/release from before a change) and builds nothing, for A/B runs of two builds.
set -euo pipefail
cd "$(dirname "$0")/.."

matches=200 seconds=30 ramp=10 only=aio,aio-memory,cluster,boardgameio,colyseus bin=
while [ $# -gt 0 ]; do
  case "$1" in
    --matches) matches=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --ramp-seconds) ramp=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) sed -n '2,20p' "$0" >&2; exit 64 ;;
  esac
done
wants() { [[ ",$only," == *",$1,"* ]]; }

if [ -z "$bin" ]; then
  echo "==> building (release)"
  cargo build --release --locked -p juegoland -p juegoland-loadtest
  bin=target/release
fi
out=target/loadtest/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
secret=compare-$$-token-secret-of-32-bytes-or-more
summaries=()
# A row that fails (its run or its audit) ends the script: the server it started stops too,
# rather than play on under the next command.
trap 'pids=$(jobs -p); [ -z "$pids" ] || { kill -TERM $pids 2>/dev/null; wait $pids 2>/dev/null; } || true' EXIT

wait_ready() {
  for _ in $(seq 1 100); do
    curl -fsS "$1/readyz" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "no server at $1" >&2
  return 1
}

if wants aio; then
  echo "==> all-in-one"
  data=$(mktemp -d)
  "$bin/juegoland" dev --data-dir "$data" --http 127.0.0.1:18080 --jwt-secret "$secret" \
    >"$out/aio.log" 2>&1 &
  pid=$!
  wait_ready http://127.0.0.1:18080
  "$bin/juegoland-loadtest" run --api http://127.0.0.1:18080 --jwt-secret "$secret" \
    --matches "$matches" --duration "${seconds}s" --ramp-up "${ramp}s" \
    --watch "engine=pid:$pid" --audit-data-dir "$data" \
    --label "juegoland all-in-one (SQLite, durable)" --out "$out/aio.json" >/dev/null
  kill -TERM "$pid"; wait "$pid" || true
  rm -rf "$data"
  summaries+=("$out/aio.json")
fi

if wants aio-memory; then
  echo "==> all-in-one, in memory (not durable)"
  "$bin/juegoland" dev --in-memory --http 127.0.0.1:18080 --jwt-secret "$secret" >"$out/aio-memory.log" 2>&1 &
  pid=$!
  wait_ready http://127.0.0.1:18080
  "$bin/juegoland-loadtest" run --api http://127.0.0.1:18080 --jwt-secret "$secret" \
    --matches "$matches" --duration "${seconds}s" --ramp-up "${ramp}s" --watch "engine=pid:$pid" \
    --label "juegoland all-in-one in memory (NOT durable: the floor without storage)" \
    --out "$out/aio-memory.json" >/dev/null
  kill -TERM "$pid"; wait "$pid" || true
  summaries+=("$out/aio-memory.json")
fi

if wants aio-pg; then
  echo "==> all-in-one on PostgreSQL (the owner-served bound)"
  schema=loadtest_compare_aio
  psql -h 127.0.0.1 -U postgres -d test -qc "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema"
  url="postgres://postgres@127.0.0.1:5432/test?options[search_path]=$schema"
  "$bin/juegoland" dev --database-url "$url" --http 127.0.0.1:18080 --jwt-secret "$secret" \
    >"$out/aio-pg.log" 2>&1 &
  pid=$!
  wait_ready http://127.0.0.1:18080
  "$bin/juegoland-loadtest" run --api http://127.0.0.1:18080 --jwt-secret "$secret" \
    --matches "$matches" --duration "${seconds}s" --ramp-up "${ramp}s" \
    --watch "engine=pid:$pid" --watch postgres=comm:postgres --audit-database-url "$url" \
    --label "juegoland all-in-one (PostgreSQL, durable)" --out "$out/aio-pg.json" >/dev/null
  kill -TERM "$pid"; wait "$pid" || true
  psql -h 127.0.0.1 -U postgres -d test -qc "DROP SCHEMA IF EXISTS $schema CASCADE"
  summaries+=("$out/aio-pg.json")
fi

# A `juegoland cluster` row: NAME, its LABEL, the cluster's role flags up to `--`, then the
# load test's transport flags. Each row has a schema of its own, dropped after the run.
cluster_row() {
  local name=$1 label=$2; shift 2
  local roles=()
  while [ "$1" != -- ]; do roles+=("$1"); shift; done
  shift
  local schema=loadtest_compare_${name//-/_}
  psql -h 127.0.0.1 -U postgres -d test -qc "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema"
  local url="postgres://postgres@127.0.0.1:5432/test?options[search_path]=$schema"
  "$bin/juegoland" cluster --nodes 2 --routers 1 --schedulers 1 "${roles[@]}" \
    --database-url "$url" --jwt-secret "$secret" --pids-file "$out/pids-$name.json" \
    --router-http-port 18180 --router-port 17000 --node-port 17100 \
    --scheduler-http-port 19200 >"$out/$name.log" 2>&1 &
  local pid=$! i
  wait_ready http://127.0.0.1:18180
  for i in "${!roles[@]}"; do
    if [ "${roles[$i]}" = --gateway-port ]; then wait_ready "http://127.0.0.1:${roles[$((i + 1))]}"; fi
  done
  "$bin/juegoland-loadtest" run --api http://127.0.0.1:18180 "$@" \
    --jwt-secret "$secret" --matches "$matches" --duration "${seconds}s" --ramp-up "${ramp}s" \
    --watch "engine=pids-file:$out/pids-$name.json" --watch postgres=comm:postgres --watch redis=comm:redis-server \
    --audit-database-url "$url" --label "$label" --out "$out/$name.json" >/dev/null
  kill -TERM "$pid"; wait "$pid" || true
  psql -h 127.0.0.1 -U postgres -d test -qc "DROP SCHEMA IF EXISTS $schema CASCADE"
  summaries+=("$out/$name.json")
}

if wants cluster; then
  echo "==> cluster on PostgreSQL and Redis"
  cluster_row cluster "juegoland cluster (PostgreSQL + Redis, durable)" \
    --gateways 1 --gateway-port 18190 -- --ws ws://127.0.0.1:18190/v1/ws
fi

if wants cluster-near; then
  echo "==> cluster, clients served by the node that owns their matches"
  cluster_row cluster-near "juegoland cluster, owner-served clients (PostgreSQL + Redis, durable)" \
    --gateways 0 --node-edge-port 18290 -- --ws-owner --ws ws://127.0.0.1:18290/v1/ws
fi

for peer in boardgameio colyseus; do
  if wants "$peer"; then
    echo "==> $peer"
    loadtest/peers/run.sh "$peer" --matches "$matches" --seconds "$seconds" --ramp-seconds "$ramp" \
      --out "$out/$peer.json" >/dev/null
    summaries+=("$out/$peer.json")
  fi
done

versions=$(node -e '
  const l = require("./loadtest/peers/package-lock.json").packages;
  const v = n => (l["node_modules/" + n] || {}).version;
  console.log(`boardgame.io ${v("boardgame.io")}, @colyseus/core ${v("@colyseus/core")}, colyseus.js ${v("colyseus.js")}, Node ${process.version}`);
')
note="Run $(date -u +%Y-%m-%dT%H:%MZ) by \`loadtest/compare.sh --matches $matches --seconds $seconds --ramp-seconds $ramp\` \
on $(nproc) vCPUs ($(uname -m)), everything on this one machine; $versions; PostgreSQL \
$(psql -V | awk '{print $3}'), Redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'). Raw summaries: \`$out/\`."
"$bin/juegoland-loadtest" report "${summaries[@]}" --write docs/benchmarks.md --section comparison --note "$note"
