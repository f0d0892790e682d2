#!/usr/bin/env bash
# End-to-end test of the web UI (SPEC §18, issue 30) in Debian's headless
# chromium, driven by playwright-core with axe-core (ui/package.json; the
# browser is never downloaded). Builds groundgate and the two MCP upstreams
# the gateway pages show (cmd/airline-mcp for a session with a refused call,
# cmd/mcp-testupstream for a tool description holding HTML), starts a real
# `groundgate serve` on a loopback port with an admin token, and runs
# ui/e2e/run.mjs against it: discover → ground (and a refused grounding) →
# execute a 256-morphism grid → heat map and equity curves → replay → diff
# → a session's timeline, with axe on every page, keyboard navigation,
# HTML shown as text, no token in any URL, and the execution page's time to
# interactive printed. Screenshots go to $UI_E2E_ARTIFACTS (default
# ui/e2e/screenshots). Needs chromium (scripts/lib/apt.sh installs it),
# node and npm; installs ui/node_modules from the lockfile when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/lib/serve.sh
. tools/lib/serve.sh
# shellcheck source=scripts/lib/apt.sh
. scripts/lib/apt.sh
command -v chromium >/dev/null 2>&1 || apt_install chromium
require_tools ui-e2e chromium node npm jq curl go
if [ ! -d ui/node_modules ] || [ ui/package-lock.json -nt ui/node_modules ]; then
  echo "== npm ci --prefix ui"
  npm ci --prefix ui --no-audit --no-fund
fi
with_scratch
go build -o "$tmp/groundgate" ./cmd/groundgate
go build -o "$tmp/airline-mcp" ./cmd/airline-mcp
go build -o "$tmp/mcp-testupstream" ./cmd/mcp-testupstream
TOKEN_ADMIN=$(new_token)
# τ-bench's clock: the airline rules read "now" (docs/sessions.md).
start_groundgate "$tmp/groundgate" "$tmp/ui.db" "$tmp/server.log" "$TOKEN_ADMIN" --clock 2024-05-15T15:00:00-05:00
await_ready
export UI_E2E_BASE="http://$addr" UI_E2E_TOKEN="$TOKEN_ADMIN" UI_E2E_TMP="$tmp" UI_E2E_REPO="$PWD"
export UI_E2E_ARTIFACTS=${UI_E2E_ARTIFACTS:-$PWD/ui/e2e/screenshots}
node ui/e2e/run.mjs
# The token is in no log line (the access log records paths, never headers).
if grep -q "$TOKEN_ADMIN" "$tmp/server.log"; then
  echo "ui-e2e: the admin token is in the server's log" >&2
  exit 1
fi
echo "ui-e2e: ok"
