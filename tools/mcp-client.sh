#!/usr/bin/env bash
# Outside MCP check: the official TypeScript MCP SDK (tools/mcp-client/client.mjs)
# drives a real groundgate over both transports — `groundgate mcp` on stdio,
# and `groundgate serve`'s /mcp over streamable HTTP with the admin token —
# listing tools, discovering, grounding (admitted and refused), executing,
# replaying, reading a resource and sending bad arguments.
#
#   bash tools/mcp-client.sh      (needs `npm ci --prefix tools`)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
[ -d "$root/tools/node_modules/@modelcontextprotocol/sdk" ] || { echo "mcp-client: run 'npm ci --prefix tools' first" >&2; exit 2; }

source "$root/tools/lib/serve.sh"
with_scratch

go build -o "$tmp/groundgate" ./cmd/groundgate
echo "mcp-client: @modelcontextprotocol/sdk $(node -p "require('$root/tools/node_modules/@modelcontextprotocol/sdk/package.json').version"), node $(node --version)"

node tools/mcp-client/client.mjs stdio "$tmp/groundgate" "$tmp/stdio.db"

token=$(new_token)
start_groundgate "$tmp/groundgate" "$tmp/http.db" "$tmp/server.log" "$token"
node tools/mcp-client/client.mjs http "http://$addr/mcp" "$token"
fives=$(jq -s '[.[] | select(.msg == "http" and .status >= 500)] | length' "$tmp/server.log")
[ "$fives" -eq 0 ] || { echo "mcp-client: the server answered $fives requests with 5xx" >&2; exit 1; }
