#!/usr/bin/env bash
# Two builds of the all-in-one under load AT THE SAME TIME, for an A/B of a change smaller
# than this VM's run-to-run spread: each `juegoland dev --in-memory` gets its own harness,
# both run together, so a slow or fast stretch of the machine falls on both alike.
#
#   loadtest/ab.sh DIR_A DIR_B [--matches N] [--seconds S]
#
# DIR_A and DIR_B hold a `juegoland` binary each (e.g. a copy of target/release from before
# a change, and target/release). Prints each server's moves per server CPU-second and B/A.
# The server started second does a little better (about 4% with the same binary twice), so
# run every pair both ways round and compare the two ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,11p' "$0" >&2; exit 64; }
a=$1 b=$2; shift 2
matches=100 seconds=30
while [ $# -gt 0 ]; do
  case "$1" in
    --matches) matches=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) sed -n '2,11p' "$0" >&2; exit 64 ;;
  esac
done
harness=target/release/juegoland-loadtest
out=target/loadtest/ab-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
secret=ab-$$-token-secret-of-32-bytes-or-more
"$a/juegoland" dev --in-memory --http 127.0.0.1:18081 --jwt-secret "$secret" >"$out/a.log" 2>&1 & pa=$!
"$b/juegoland" dev --in-memory --http 127.0.0.1:18082 --jwt-secret "$secret" >"$out/b.log" 2>&1 & pb=$!
trap 'kill -TERM $pa $pb 2>/dev/null || true' EXIT
for port in 18081 18082; do
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
done
run() {
  "$harness" run --api "http://127.0.0.1:$1" --jwt-secret "$secret" --matches "$matches" \
    --duration "${seconds}s" --ramp-up 5s --watch "engine=pid:$2" --label "$3" --out "$out/$3.json" >/dev/null
}
run 18081 "$pa" a & ra=$!
run 18082 "$pb" b & rb=$!
wait "$ra" "$rb"
node -e '
  const [a, b] = process.argv.slice(1).map(f => require(f));
  const r = s => s.movesPerServerCpuSecond.toFixed(0);
  console.log(`A ${r(a)}  B ${r(b)}  B/A ${(b.movesPerServerCpuSecond / a.movesPerServerCpuSecond).toFixed(3)}`);
' "$PWD/$out/a.json" "$PWD/$out/b.json"
