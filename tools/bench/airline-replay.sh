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
#   bash tools/bench/airline-replay.sh [--data DIR] [--json FILE] [-- REPLAY-FLAG…]
#
#   --data DIR   shared/data/tau-airline (default: $GROUNDGATE_SHARED/data/
#                tau-airline, else ../shared/data/tau-airline beside the
#                repository)
#   --json FILE  also write the JSON summary to FILE
#   after --, flags for airline-replay (-mutations=false, -direct=false, …)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export LC_ALL=C.UTF-8

data=
json=
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --data) data=$2; shift ;;
    --data=*) data=${1#*=} ;;
    --json) json=$2; shift ;;
    --json=*) json=${1#*=} ;;
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
echo "airline-replay: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown), data $data" >&2

token=$(new_token)
start_groundgate "$tmp/groundgate" "$tmp/g.db" "$tmp/server.log" "$token" --clock 2024-05-15T15:00:00-05:00
await_ready

GROUNDGATE_ADMIN_TOKEN=$token "$tmp/airline-replay" \
  --url "http://$addr" --data "$data" --examples "$root/examples/airline" --airline-mcp "$tmp/airline-mcp" \
  ${json:+--json "$json"} "${extra[@]}"

fives=$(jq -s '[.[] | select(.msg == "http" and .status >= 500)] | length' "$tmp/server.log")
[ "$fives" -eq 0 ] || { echo "airline-replay: the server answered $fives requests with 5xx" >&2; exit 1; }
