#!/usr/bin/env bash
# Peak memory, time and database growth of a large grid, measured from
# outside the process like a user would (issue 9): a 256-morphism MOM_WZS
# sweep (16 signal windows × 16 risk windows) on the bundled fx panel
# (fx-fed-h10/daily.csv, 12,240 rows × 34 currencies), then a 4,096-morphism
# sweep on the same panel, which must be refused up front with the budget
# named. Usage: bash reproducibility/bench/grid_memory.sh [GROUNDGATE_BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=${1:-}
if [ -z "$bin" ]; then
  bin="$work/groundgate"
  go build -o "$bin" ./cmd/groundgate
fi
db="$work/grid.db"
prompt="momentum strategy scored by sharpe ratio"
"$bin" registry list --db "$db" >/dev/null # seed
seeded=$(stat -c %s "$db")

list() { local from=$1 step=$2 n=$3 out=() i; for ((i = 0; i < n; i++)); do out+=($((from + i * step))); done; local IFS=,; echo "${out[*]}"; }
cat >"$work/r256.json" <<JSON
{"family":"MOM_WZS","metric":"SRP","data":"fx-fed-h10/daily.csv",
 "params":{"window":[$(list 10 5 16)],"risk_window":[$(list 20 10 16)]}}
JSON
cat >"$work/r4096.json" <<JSON
{"family":"MOM_WZS","metric":"SRP","data":"fx-fed-h10/daily.csv",
 "params":{"window":[$(list 10 2 64)],"risk_window":[$(list 20 3 64)]}}
JSON

/usr/bin/time -v "$bin" run --db "$db" --request "$work/r256.json" --prompt "$prompt" >"$work/fp.json" 2>"$work/time.txt"
rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time.txt")
grown=$(( $(stat -c %s "$db") - seeded ))
morphisms=$(jq '.morphisms | length' "$work/fp.json")
echo "256-grid: morphisms $morphisms, peak RSS $((rss / 1024)) MiB, wall $wall, database growth $((grown / 1048576)) MiB"
[ "$morphisms" = 256 ] || { echo "FAIL: expected 256 morphisms"; exit 1; }
"$bin" replay --db "$db" "$(jq -r .hash "$work/fp.json")" >"$work/replay.json"
[ "$(jq -r .match "$work/replay.json")" = true ] || { echo "FAIL: replay did not match"; exit 1; }
echo "256-grid: replay matches at every layer"

set +e
/usr/bin/time -v "$bin" run --db "$db" --request "$work/r4096.json" --prompt "$prompt" >"$work/fp4096.json" 2>"$work/time4096.txt"
code=$?
set -e
rss4=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time4096.txt")
reason=$(grep -m1 -o 'over budget.*' "$work/time4096.txt" || true)
echo "4096-grid: exit $code, peak RSS $((rss4 / 1024)) MiB: ${reason:-no refusal}"
[ "$code" != 0 ] && [ -n "$reason" ] || { echo "FAIL: the 4096-morphism grid was not refused with the budget named"; exit 1; }
