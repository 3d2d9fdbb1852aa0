#!/usr/bin/env bash
# The honest load undisturbed, then under each attack of `--attack` (issue 25): one fresh
# `juegoland dev` (embedded SQLite store, every move durable) per run, the players from
# 127.0.0.1 and the attackers from 127.0.0.2. Prints one markdown row per run: the players'
# moves/s and command → view p50 / p99, the server's peak memory (PSS) and CPU, and what the
# server did to the attackers. The table goes into docs/benchmarks.md (issue 25).
#
#   loadtest/abuse.sh [--matches N] [--seconds S] [--attackers N] [--bin DIR] [ATTACK...]
#
# ATTACKs default to: none flood slowloris slow-reader storm oversize.
set -euo pipefail
cd "$(dirname "$0")/.."
matches=100 seconds=20 attackers=50 bin=${CARGO_TARGET_DIR:-target}/release
attacks=()
while [ $# -gt 0 ]; do
  case "$1" in
    --matches) matches=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --attackers) attackers=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -*) sed -n '2,10p' "$0" >&2; exit 64 ;;
    *) attacks+=("$1"); shift ;;
  esac
done
[ ${#attacks[@]} -gt 0 ] || attacks=(none flood slowloris slow-reader storm oversize)
out=${CARGO_TARGET_DIR:-target}/loadtest/abuse-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
secret=abuse-$$-token-secret-of-32-bytes-or-more
port=18093
echo "| attack | attackers | moves/s | command → view p50 / p99 ms | server peak PSS MiB | server CPU s | errors | what the server did to the attackers |"
echo "|---|---|---|---|---|---|---|---|"
for attack in "${attacks[@]}"; do
  data=$(mktemp -d)
  "$bin/juegoland" dev --data-dir "$data" --http 127.0.0.1:$port --jwt-secret "$secret" >"$out/$attack.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
  extra=()
  [ "$attack" = none ] || extra=(--attack "$attack" --attackers "$attackers")
  "$bin/juegoland-loadtest" run --api "http://127.0.0.1:$port" --jwt-secret "$secret" --matches "$matches" \
    --duration "${seconds}s" --ramp-up 5s --watch "engine=pid:$pid" --audit-data-dir "$data" \
    --label "$attack" --out "$out/$attack.json" "${extra[@]}" >/dev/null 2>"$out/$attack.harness.log" || true
  curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null | grep '^juegoland_edge_refused_total' >"$out/$attack.refused" || true
  kill -TERM $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  rm -rf "$data"
  refused=$(awk '$2 > 0 { sub(/juegoland_edge_refused_total\{reason="/, "", $1); sub(/"\}/, "", $1); printf "%s%s %d", sep, $1, $2; sep=", " }' "$out/$attack.refused")
  jq -r --arg refused "$refused" '
    def r1: (. * 10 | round) / 10;
    "| \(.server) | \(.attack.attackers // 0) | \(.movesPerSecond) | \(.latencyMs.commandToView.p50 | r1) / \(.latencyMs.commandToView.p99 | r1) | \(.serverPeakRssBytes / 1048576 | round) | \(.serverCpuSeconds | r1) | \(.errors | to_entries | map("\(.key) \(.value)") | join(", ") | if . == "" then "0" else . end) | \(if .attack then "opened \(.attack.opened), refused \(.attack.refused), closed \(.attack.closedByServer), rate-limited \(.attack.rateLimited); server: \($refused)" else "—" end) \(if .audit.passed then "" else "(AUDIT FAILED)" end)|"
  ' "$out/$attack.json"
done
echo "summaries in $out" >&2
