# Sourced by the scripts in tools/: starting a real groundgate server for an
# outside check.

# new_token prints a random admin token.
new_token() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# start_groundgate BINARY DB LOG TOKEN [FLAG…] starts `BINARY serve` on a
# free loopback port with TOKEN as its admin token (and the serve flags
# given after it), logging to LOG, and waits until it serves: $server is
# its pid, $addr its HOST:PORT.
start_groundgate() {
  local bin=$1 db=$2 log=$3 token=$4
  shift 4
  GROUNDGATE_ADMIN_TOKEN=$token "$bin" serve --addr 127.0.0.1:0 --db "$db" "$@" 2>"$log" &
  server=$!
  addr=
  for _ in $(seq 300); do
    addr=$(jq -r 'select(.msg == "serving") | .addr' "$log" 2>/dev/null | head -1)
    [ -n "$addr" ] && return 0
    kill -0 "$server" 2>/dev/null || { cat "$log" >&2; return 1; }
    sleep 0.1
  done
  echo "groundgate serve did not start" >&2
  return 1
}

# with_scratch makes $tmp a new scratch directory and, on exit, stops the
# server start_groundgate started (if still running) and removes $tmp.
with_scratch() {
  tmp=$(mktemp -d)
  server=
  trap 'if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT
}

# require_tools NAME TOOL… exits 2 (naming the script NAME) unless every
# TOOL is on the PATH.
require_tools() {
  local name=$1 t
  shift
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 || { echo "$name: $t is missing" >&2; exit 2; }
  done
}

# await_ready waits (up to a minute) until the server start_groundgate
# started answers /readyz with 200: every discovery tier built.
await_ready() {
  for _ in $(seq 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/readyz")" = 200 ] && return 0
    sleep 0.1
  done
  echo "groundgate serve was not ready within a minute" >&2
  return 1
}
