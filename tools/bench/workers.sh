#!/usr/bin/env bash
# Throughput of executions on workers (issue 29): JOBS distinct
# 100-morphism grids (default 8) asked for at once, through the
# PostgreSQL job queue to 1 and to 2 `groundgate worker` processes, and
# one after another on one bbolt server for reference. Prints, per case,
# jobs/s, the median (p50-s) and longest (max-s) latency of one execution.
#
# Needs what the PostgreSQL tests need: Debian's postgresql package and
# SeaweedFS's weed (bash scripts/test.sh installs and builds both).
#   JOBS=8 COUNT=3 bash tools/bench/workers.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
GROUNDGATE_BENCH_JOBS=${JOBS:-8} GROUNDGATE_REQUIRE_TOOLS=1 \
  go test ./internal/app -run '^$' -bench '^BenchmarkWorkers$' -benchtime 1x \
  -count "${COUNT:-1}" -timeout 60m
