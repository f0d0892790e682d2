#!/usr/bin/env bash
# τ-bench's airline tasks through groundgate (issue 28), measured from
# outside like a host: builds groundgate, airline-mcp and
# tools/bench/airline-replay, starts `groundgate serve --clock
# 2024-05-15T15:00:00-05:00` (τ-bench's "now") on a fresh database with an
# admin token, and runs the replay: the upstream (examples/airline/
# upstream.json), the sync overlay, the policies, then every task's gold
# actions in a session of its own, the wanted calls of the tasks without
# actions, the mutations of every gold write, and the same gold actions
# sent to airline-mcp directly. Prints a text table (see
# tools/bench/airline-replay/main.go for each figure) and a JSON summary.
#
#   bash tools/bench/airline-replay.sh [--data DIR] [--json FILE] [--against REV [--rounds N]] [-- REPLAY-FLAG…]
#
#   --data DIR     shared/data/tau-airline (default: $GROUNDGATE_SHARED/data/
#                  tau-airline, else ../shared/data/tau-airline beside the
#                  repository)
#   --json FILE    also write the JSON summary to FILE (with --against:
#                  FILE.ROUND.head.json and FILE.ROUND.against.json)
#   --against REV  also build groundgate at git revision REV and replay
#                  against it and this tree's server one after the other,
#                  each on a fresh server, so that a before/after comparison
#                  sees the same machine (latency on a shared box moves with
#                  its load); the same replay client and airline-mcp serve
#                  both
#   --rounds N     with --against, N rounds of the pair, the order swapped
#                  each round (default 1)
#   after --, flags for airline-replay (-mutations=false, -direct=false, …)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export LC_ALL=C.UTF-8

data=
json=
against=
rounds=1
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --data) data=$2; shift ;;
    --data=*) data=${1#*=} ;;
    --json) json=$2; shift ;;
    --json=*) json=${1#*=} ;;
    --against) against=$2; shift ;;
    --against=*) against=${1#*=} ;;
    --rounds) rounds=$2; shift ;;
    --rounds=*) rounds=${1#*=} ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "airline-replay: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$data" ]; then
  data=${GROUNDGATE_SHARED:-$(dirname "$root")/shared}/data/tau-airline
fi
for f in tasks.json db/users.json db/reservations.json db/flights.json; do
  [ -r "$data/$f" ] || { echo "airline-replay: $data/$f is missing (give --data DIR or set GROUNDGATE_SHARED)" >&2; exit 2; }
done
data=$(realpath "$data")
[ -z "$json" ] || json=$(realpath -m "$json")
source "$root/tools/lib/serve.sh"
require_tools airline-replay go jq curl z3
with_scratch

echo "airline-replay: building in $tmp" >&2
go build -o "$tmp/groundgate" ./cmd/groundgate
go build -o "$tmp/airline-mcp" ./cmd/airline-mcp
go build -o "$tmp/airline-replay" ./tools/bench/airline-replay
head=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
echo "airline-replay: $head, data $data" >&2
if [ -n "$against" ]; then
  [[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "airline-replay: --rounds takes a positive number" >&2; exit 2; }
  mkdir "$tmp/against"
  git -C "$root" archive "$against" | tar -x -C "$tmp/against"
  (cd "$tmp/against" && go build -o "$tmp/groundgate-against" ./cmd/groundgate)
  against=$(git -C "$root" rev-parse --short "$against")
fi

# replay_on BINARY JSON: a fresh server of BINARY on a fresh database,
# the replay against it (JSON: its summary, or empty), then the server
# stopped; fails if the replay does or the server answered a 5xx.
replay_on() {
  local bin=$1 out=$2 fives status=0
  rm -f "$tmp/g.db"
  token=$(new_token)
  start_groundgate "$bin" "$tmp/g.db" "$tmp/server.log" "$token" --clock 2024-05-15T15:00:00-05:00
  await_ready
  GROUNDGATE_ADMIN_TOKEN=$token "$tmp/airline-replay" \
    --url "http://$addr" --data "$data" --examples "$root/examples/airline" --airline-mcp "$tmp/airline-mcp" \
    ${out:+--json "$out"} "${extra[@]}" || status=$?
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  server=
  # /readyz answers 503 until the server is ready: await_ready's polls.
  fives=$(jq -c 'select(.msg == "http" and .status >= 500 and .path != "/readyz")' "$tmp/server.log")
  [ -z "$fives" ] || { echo "airline-replay: the server answered 5xx:" >&2; echo "$fives" >&2; return 1; }
  return "$status"
}

if [ -z "$against" ]; then
  replay_on "$tmp/groundgate" "$json"
  exit
fi
failed=0
for round in $(seq "$rounds"); do
  order=(head against)
  [ $((round % 2)) -eq 1 ] || order=(against head)
  for side in "${order[@]}"; do
    bin=$tmp/groundgate rev=$head
    [ "$side" = head ] || bin=$tmp/groundgate-against rev=$against
    echo "== round $round: $side ($rev), $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)"
    replay_on "$bin" "${json:+$json.$round.$side.json}" || failed=1
  done
done
exit "$failed"
