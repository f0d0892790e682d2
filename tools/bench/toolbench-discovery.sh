#!/usr/bin/env bash
# Discovery on real words (issue 26), measured from outside like a user:
# builds groundgate, mcp-testupstream and tools/bench/toolbench-discovery,
# starts `groundgate serve` on a fresh database with an admin token,
# registers the 2,479 StableToolBench APIs as the tools of one stdio
# upstream (`mcp-testupstream --toolbench DIR`), syncs it with apply,
# discovers each of the 765 requests and scores the tool matches against
# the gold APIs. Prints a text table and a JSON summary (see
# tools/bench/toolbench-discovery/main.go for what each figure means).
# Discovery is deterministic: the figures are the same on every run.
#
#   bash tools/bench/toolbench-discovery.sh [--data DIR] [--json FILE]
#
#   --data DIR   holds stabletoolbench-tools.json and
#                stabletoolbench-queries.jsonl (default:
#                $GROUNDGATE_SHARED/data/tool-discovery, else
#                ../shared/data/tool-discovery beside the repository)
#   --json FILE  also write the JSON summary to FILE
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export LC_ALL=C.UTF-8

data=
json=
while [ $# -gt 0 ]; do
  case $1 in
    --data) data=$2; shift ;;
    --data=*) data=${1#*=} ;;
    --json) json=$2; shift ;;
    --json=*) json=${1#*=} ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "toolbench-discovery: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$data" ]; then
  data=${GROUNDGATE_SHARED:-$(dirname "$root")/shared}/data/tool-discovery
fi
for f in stabletoolbench-tools.json stabletoolbench-queries.jsonl; do
  [ -r "$data/$f" ] || { echo "toolbench-discovery: $data/$f is missing (give --data DIR or set GROUNDGATE_SHARED)" >&2; exit 2; }
done
data=$(realpath "$data")
[ -z "$json" ] || json=$(realpath -m "$json")
source "$root/tools/lib/serve.sh"
require_tools toolbench-discovery go jq curl
with_scratch

echo "toolbench-discovery: building in $tmp" >&2
go build -o "$tmp/groundgate" ./cmd/groundgate
go build -o "$tmp/mcp-testupstream" ./cmd/mcp-testupstream
go build -o "$tmp/toolbench-discovery" ./tools/bench/toolbench-discovery
echo "toolbench-discovery: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown), data $data ($(sha256sum "$data/stabletoolbench-tools.json" | cut -c1-12) tools, $(sha256sum "$data/stabletoolbench-queries.jsonl" | cut -c1-12) queries)" >&2

token=$(new_token)
start_groundgate "$tmp/groundgate" "$tmp/g.db" "$tmp/server.log" "$token"
await_ready

GROUNDGATE_ADMIN_TOKEN=$token "$tmp/toolbench-discovery" \
  --url "http://$addr" --queries "$data/stabletoolbench-queries.jsonl" --upstream toolbench \
  ${json:+--json "$json"} \
  -- "$tmp/mcp-testupstream" --toolbench "$data"

fives=$(jq -s '[.[] | select(.msg == "http" and .status >= 500)] | length' "$tmp/server.log")
[ "$fives" -eq 0 ] || { echo "toolbench-discovery: the server answered $fives requests with 5xx" >&2; exit 1; }
