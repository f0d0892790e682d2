#!/usr/bin/env bash
# The cluster test (issue 29, SPEC §17): three `groundgate serve` replicas
# and two `groundgate worker` processes over one PostgreSQL database and
# one SeaweedFS bucket on loopback, under a mixed load for
# GROUNDGATE_CLUSTER_SECONDS (default 60), with one worker and one server
# killed with SIGKILL mid-load, then a worker killed mid fuzz run
# (internal/crashtest/cluster_test.go and cluster_fuzz_test.go, built
# with -tags cluster so that `go test ./...` does not run it). It needs
# what scripts/test.sh installs (PostgreSQL, weed); run that first on a
# fresh machine. Extra arguments go to go test (-v, -run …).
set -euo pipefail
cd "$(dirname "$0")/.."
export GROUNDGATE_REQUIRE_TOOLS=1
if [ -z "${GROUNDGATE_WEED:-}" ]; then
  # shellcheck source=scripts/lib/weed.sh
  . scripts/lib/weed.sh
  weed_build
fi
echo "== go test -tags cluster ./internal/crashtest -run TestClusterUnderLoad (${GROUNDGATE_CLUSTER_SECONDS:-60} s of load)"
exec go test -tags cluster -count=1 -timeout 20m -run TestClusterUnderLoad ./internal/crashtest "$@"
