#!/usr/bin/env bash
# Outside fuzz of the REST API from its OpenAPI document. Portman
# (@apideck/portman, pinned in tools/package.json) derives a Postman
# collection from server/openapi.json: every operation with its documented
# example and contract tests, portman's own fuzz variations of every request
# body, and the random variations of tools/api-fuzz/portman-config.json.
# Newman runs it round after round against a real `groundgate serve` on
# 127.0.0.1 with GROUNDGATE_ADMIN_TOKEN set (so registry writes run too).
#
# The gateway's routes (SPEC §14) get one upstream, configured here before
# the fuzz: the repository's own cmd/mcp-testupstream over stdio (its tools
# keep their items in memory), its read-only tools exempt from grounding,
# so calls, replays, diffs and attestations run for real. The fuzz itself
# never configures an upstream: PUT /v1/upstreams/{name} runs argv on this
# machine, so portman-config.json sends it without the token, with a wrong
# one, or with a transport no configuration has (refused before anything
# starts), never a body the server would accept.
#
# Fails on any 5xx (seen by newman or in the server's access log), any
# status the document does not list for the operation, and any failed
# contract test. Prints the request count and a status histogram.
#
#   bash tools/api-fuzz.sh [SECONDS]     (default 120; needs `npm ci --prefix tools`)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-120}
root=$PWD
tools=$root/tools
[ -x "$tools/node_modules/.bin/portman" ] || { echo "api-fuzz: run 'npm ci --prefix tools' first" >&2; exit 2; }

source "$tools/lib/serve.sh"
with_scratch

go build -o "$tmp/groundgate" ./cmd/groundgate
token=$(new_token)
start_groundgate "$tmp/groundgate" "$tmp/fuzz.db" "$tmp/server.log" "$token"
go build -o "$tmp/mcp-testupstream" ./cmd/mcp-testupstream
auth="Authorization: Bearer $token"
jq -n --arg bin "$tmp/mcp-testupstream" '{transport: "stdio", command: [$bin], ground: "writes"}' |
  curl -sf -X PUT "http://$addr/v1/upstreams/shop" -H "$auth" -H 'Content-Type: application/json' --data-binary @- >/dev/null
for _ in $(seq 300); do
  curl -sf "http://$addr/v1/upstreams/shop" | jq -e '.status.connected' >/dev/null && break
  sleep 0.1
done
curl -sf -X POST "http://$addr/v1/upstreams/shop/sync" -H "$auth" -H 'Content-Type: application/json' \
  -d '{"apply": true}' | jq -e '.applied' >/dev/null ||
  { echo "api-fuzz: the test upstream did not sync" >&2; cat "$tmp/server.log" >&2; exit 1; }
echo "api-fuzz: groundgate serve on $addr; portman $("$tools/node_modules/.bin/portman" --version), newman $("$tools/node_modules/.bin/newman" --version)"

# Portman writes scratch files into its working directory: give it $tmp.
cp "$tools"/api-fuzz/{portman-config.json,random.js,checks.js} "$tmp/"
(cd "$tmp" && "$tools/node_modules/.bin/portman" --local "$root/server/openapi.json" --baseUrl "http://$addr" \
  --portmanConfigFile portman-config.json --output collection.json >portman.log 2>&1) ||
  { cat "$tmp/portman.log" >&2; exit 1; }
if grep -q 'Invalid Portman Config' "$tmp/portman.log"; then cat "$tmp/portman.log" >&2; exit 1; fi

status=0
node "$tools/api-fuzz/run.js" --collection "$tmp/collection.json" --openapi server/openapi.json \
  --seconds "$seconds" --token "$token" --out "$tmp/summary.json" || status=$?

kill "$server"
wait "$server" || true
server=
# The server's own count: every request it answered, by status.
echo "server access log: $(jq -s -r '[.[] | select(.msg == "http")] | "\(length) requests; statuses: " + (group_by(.status) | map("\(.[0].status)×\(length)") | join(" "))' "$tmp/server.log")"
fives=$(jq -s '[.[] | select(.msg == "http" and .status >= 500)] | length' "$tmp/server.log")
if [ "$fives" -gt 0 ]; then
  echo "api-fuzz: the server logged $fives 5xx answers:"
  jq -c 'select((.msg == "http" and .status >= 500) or .level == "ERROR")' "$tmp/server.log" | head -20
  status=1
fi
exit "$status"
