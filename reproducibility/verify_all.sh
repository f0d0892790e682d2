#!/usr/bin/env bash
# Reproduces the paper's deterministic experiments against this
# implementation, from a clean checkout, and checks the documentation's
# commands. Writes reproducibility/results/ (report.md, results.json,
# comparison-scripted.{md,json}); exits non-zero when any claim fails.
# Flags are passed to the verify command (e.g. -strict-overhead).
# See reproducibility/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

out=reproducibility/results
mkdir -p "$out"
start=$SECONDS
passed=0
failed=0

step() { # step NAME COMMAND...
  local name=$1 t0=$SECONDS
  shift
  echo "== $name: $*"
  if "$@"; then
    passed=$((passed + 1))
    echo "== $name: ok ($((SECONDS - t0))s)"
  else
    failed=$((failed + 1))
    echo "== $name: FAILED ($((SECONDS - t0))s)"
  fi
}

# 1. Selectivity, replay determinism, the drift table and overhead, each
#    beside the paper's figure: report.md and results.json.
step experiments go run ./reproducibility/cmd/verify -out "$out" "$@"
# 2. The assertion-only vs verified comparison (§4.3) with the
#    deterministic scripted proposer: comparison-scripted.{md,json}.
step comparison go run ./cmd/groundgate-compare --proposer scripted --out "$out" -q
# 3. The pipeline suite (SPEC §11): 57 pipelines on the bundled data, the
#    family rewrites against their families, 600+ injected faults and local
#    repair against replan-everything: pipelines.md.
step pipelines env GROUNDGATE_PIPELINE_REPORT="$PWD/$out/pipelines.md" go test -count=1 -run TestPipelineSuite ./execution
# 4. Every shell block of README.md and docs/*.md, the slow ones included.
step docs env GROUNDGATE_DOCS_SLOW=1 go test -count=1 ./docs

echo
echo "report: $out/report.md (comparison: $out/comparison-scripted.md, pipelines: $out/pipelines.md)"
echo "took $((SECONDS - start))s"
echo "verify_all: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
