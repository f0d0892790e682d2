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

tmp=$(mktemp -d)
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/groundgate" ./cmd/groundgate
echo "mcp-client: @modelcontextprotocol/sdk $(node -p "require('$root/tools/node_modules/@modelcontextprotocol/sdk/package.json').version"), node $(node --version)"

node tools/mcp-client/client.mjs stdio "$tmp/groundgate" "$tmp/stdio.db"

token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
GROUNDGATE_ADMIN_TOKEN=$token "$tmp/groundgate" serve --addr 127.0.0.1:0 --db "$tmp/http.db" 2>"$tmp/server.log" &
server=$!
addr=
for _ in $(seq 300); do
  addr=$(jq -r 'select(.msg == "serving") | .addr' "$tmp/server.log" 2>/dev/null | head -1)
  [ -n "$addr" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$tmp/server.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$addr" ] || { echo "mcp-client: the server did not start" >&2; exit 1; }
node tools/mcp-client/client.mjs http "http://$addr/mcp" "$token"
fives=$(jq -s '[.[] | select(.msg == "http" and .status >= 500)] | length' "$tmp/server.log")
[ "$fives" -eq 0 ] || { echo "mcp-client: the server answered $fives requests with 5xx" >&2; exit 1; }
