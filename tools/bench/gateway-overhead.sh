#!/usr/bin/env bash
# The gateway's overhead (issue 26): a read tool (mcp-testupstream's echo)
# called through `groundgate serve` (POST /v1/calls, every footprint
# durable before its 200) vs the same call from a Go client (the official
# go-sdk) connected straight to the same upstream program, 8 concurrent
# clients each side, the sides measured in turn in one run. Prints p50,
# p90, p99, max and calls/s per side, and the overhead beside the targets
# (≤ +1 ms p50, ≤ +5 ms p99, ≥ 0.3× direct throughput). See
# tools/bench/gateway-overhead/main.go for what each side does.
#
#   bash tools/bench/gateway-overhead.sh [--quick] [--policies] [-- FLAGS…]
#
#   BIN=FILE     the groundgate binary to measure (default: built from this tree)
#   --quick      2 rounds of 2 s: checks that it works; rough figures
#   --policies   also the side with tools/bench/gateway-overhead/policies.json
#                (a contract on echo and 3 tool policies; needs tool
#                contracts and policies on the server, else it stops with
#                the server's refusal)
#   FLAGS        passed on, e.g. -clients 8 -rounds 6 -block 3s, or
#                -db-dir /dev/shm (the database on a tmpfs: what the
#                fsyncs before each 200 cost, by difference)
#
# Full: 6 rounds × 3 sides × 3 s, about a minute. Needs go; z3 for --policies.
set -euo pipefail
cd "$(dirname "$0")/../.."
export LC_ALL=C.UTF-8

args=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) args+=(-rounds 2 -block 2s -warmup 1s) ;;
    --policies) args+=(-policies tools/bench/gateway-overhead/policies.json) ;;
    --) shift; args+=("$@"); break ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gateway-overhead: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
command -v go >/dev/null 2>&1 || { echo "gateway-overhead: go is missing" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "${BIN:-}" ]; then
  go build -o "$tmp/groundgate" ./cmd/groundgate
  BIN=$tmp/groundgate
fi
go build -o "$tmp/mcp-testupstream" ./cmd/mcp-testupstream
go build -o "$tmp/gateway-overhead" ./tools/bench/gateway-overhead
echo "gateway-overhead: binary $BIN (sha256 $(sha256sum "$BIN" | cut -c1-12)), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores"
"$tmp/gateway-overhead" -groundgate "$BIN" -upstream "$tmp/mcp-testupstream" "${args[@]}"
