#!/usr/bin/env bash
# Lints server/openapi.json with two outside linters, pinned in
# tools/package.json: Redocly CLI (its `recommended` rules, tools/redocly.yaml)
# and Spectral (its `spectral:oas` ruleset, tools/.spectral.yaml). Any
# error or warning from either fails; each rule switched off in those files
# says why.
#
#   bash tools/lint-openapi.sh [FILE]     (needs `npm ci --prefix tools`)
set -euo pipefail
cd "$(dirname "$0")"
doc=$(realpath "${1:-../server/openapi.json}")
bin=node_modules/.bin
[ -x "$bin/redocly" ] || { echo "lint-openapi: run 'npm ci --prefix tools' first" >&2; exit 2; }
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1

status=0
echo "== redocly $("$bin/redocly" --version) lint (recommended)"
# The JSON report has the totals; redocly's exit status counts errors only.
if ! report=$("$bin/redocly" lint --config redocly.yaml --format=json "$doc" 2>/dev/null); then :; fi
totals=$(jq -c '.totals // empty' <<<"$report" 2>/dev/null || true)
if [ -z "$totals" ]; then
  echo "redocly produced no report:"; "$bin/redocly" lint --config redocly.yaml "$doc" || true; exit 1
fi
echo "redocly: $totals"
if [ "$(jq '.errors + .warnings' <<<"$totals")" -ne 0 ]; then
  "$bin/redocly" lint --config redocly.yaml --format=stylish "$doc" || true
  status=1
fi

echo "== spectral $("$bin/spectral" --version) lint (spectral:oas)"
"$bin/spectral" lint --ruleset .spectral.yaml --fail-severity=warn "$doc" || status=1
exit "$status"
