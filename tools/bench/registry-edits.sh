#!/usr/bin/env bash
# Storage per registry version (issue 25): how much the database file grows
# when SRP of the built-in catalog is edited N times over REST, one alias
# changed per edit, as a user of the server sees it (the file's size), and
# beside it bbolt's high-water mark (the pages below it, in use or free),
# which does not move in preallocated steps, and what is in use (the
# high-water mark less bbolt's free pages), which does not depend on how
# many pages earlier writes left free. (MB here are MiB.)
#
#   bash tools/bench/registry-edits.sh [--edits N] [--no-execution]
#
#   BIN=FILE        the groundgate binary to measure (default: built from
#                   this tree)
#   --edits N       how many edits (default 300)
#   --no-execution  skip the 256-morphism execution that runs first by
#                   default (the issue's measurement: its footprint and
#                   artifacts are in the file before the edits)
#
# Steps: `groundgate serve` on a fresh file (the built-in catalog seeded);
# unless --no-execution, POST /v1/discover, /v1/ground (MOM_WZS × SRP,
# 64 windows × 4 risk windows) and /v1/executions; stop the server and
# measure; start it again, GET /v1/registry/capabilities/SRP, then N times
# PUT it back with its first alias replaced by "sharpe edit I"; stop it and
# measure again; time `groundgate registry verify` on the result. Prints
# the sizes, the growth per edit, and boltstat's per-bucket table.
set -euo pipefail
cd "$(dirname "$0")/../.."
export LC_ALL=C.UTF-8

edits=300
execution=1
while [ $# -gt 0 ]; do
  case $1 in
    --edits) edits=$2; shift ;;
    --edits=*) edits=${1#*=} ;;
    --no-execution) execution=0 ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "registry-edits: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for t in go jq curl /usr/bin/time; do
  command -v "$t" >/dev/null 2>&1 || { echo "registry-edits: $t is missing" >&2; exit 2; }
done

tmp=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/boltstat" ./tools/bench/testdata/boltstat
if [ -z "${BIN:-}" ]; then
  go build -o "$tmp/groundgate" ./cmd/groundgate
  BIN=$tmp/groundgate
fi
echo "registry-edits: binary $BIN (sha256 $(sha256sum "$BIN" | cut -c1-12)), $edits edits, execution first: $([ $execution = 1 ] && echo yes || echo no)"

db=$tmp/g.db
token=bench-token
# start: the server on a free port (a random one, another on a clash).
start() {
  for _ in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 20000))
    url=http://127.0.0.1:$port
    GROUNDGATE_ADMIN_TOKEN=$token "$BIN" serve --addr "127.0.0.1:$port" --db "$db" >"$tmp/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do
      curl -sf -o /dev/null "$url/v1/registry/capabilities/SRP" && return 0
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
    grep -q 'address already in use' "$tmp/serve.log" || break
  done
  echo "registry-edits: the server did not start:" >&2
  cat "$tmp/serve.log" >&2
  exit 1
}
stop() { kill "$pid"; wait "$pid" || true; pid=; }
size() { stat -c %s "$db"; }
stat_of() { "$tmp/boltstat" "$db" | sed -n "s/.*$1 \\([0-9]*\\) bytes.*/\\1/p"; }

start
if [ $execution = 1 ]; then
  curl -sf "$url/v1/discover" -H 'Content-Type: application/json' \
    -d '{"prompt": "Run a momentum strategy on WTI crude and score it by Sharpe ratio"}' >"$tmp/discovery.json"
  windows=$(seq 10 5 325 | paste -sd,)
  curl -sf "$url/v1/ground" -H 'Content-Type: application/json' -d '{"request": {"family": "MOM_WZS", "metric": "SRP",
    "params": {"window": ['"$windows"'], "risk_window": [20, 40, 60, 90]}, "data": "oil-spot/wti-daily.csv"},
    "discovery": "'"$(jq -r .id "$tmp/discovery.json")"'"}' >"$tmp/grounding.json"
  curl -sf "$url/v1/executions" -H 'Content-Type: application/json' \
    -d '{"grounding": "'"$(jq -r .id "$tmp/grounding.json")"'"}' >"$tmp/footprint.json"
  test "$(jq '.morphisms | length' "$tmp/footprint.json")" = 256
fi
stop
size0=$(size) hw0=$(stat_of "high water") use0=$(stat_of "in use")

start
curl -sf "$url/v1/registry/capabilities/SRP" | jq -c 'del(.identity)' >"$tmp/srp.json"
for i in $(seq "$edits"); do
  jq -c --arg a "sharpe edit $i" '.disc.aliases[0] = $a' "$tmp/srp.json" >"$tmp/body.json"
  curl -sf -o /dev/null -X PUT "$url/v1/registry/capabilities/SRP" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' --data-binary "@$tmp/body.json"
done
stop
size1=$(size) hw1=$(stat_of "high water") use1=$(stat_of "in use")

/usr/bin/time -f '%e s wall, %U s user' -o "$tmp/verify.time" "$BIN" registry verify --db "$db" >"$tmp/verify.out"
awk -v s0="$size0" -v s1="$size1" -v h0="$hw0" -v h1="$hw1" -v u0="$use0" -v u1="$use1" -v n="$edits" 'BEGIN {
  printf "file size:  %d → %d bytes: +%.2f MB, %.1f KB per edit\n", s0, s1, (s1 - s0) / 1048576, (s1 - s0) / n / 1024
  printf "high water: %d → %d bytes: +%.2f MB, %.1f KB per edit\n", h0, h1, (h1 - h0) / 1048576, (h1 - h0) / n / 1024
  printf "in use:     %d → %d bytes: +%.2f MB, %.1f KB per edit\n", u0, u1, (u1 - u0) / 1048576, (u1 - u0) / n / 1024
}'
echo "registry verify: $(cat "$tmp/verify.time"): $(cat "$tmp/verify.out")"
"$tmp/boltstat" "$db" | grep -v ' 0 *0 *0 *0 *0 *0%$'
