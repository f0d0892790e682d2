#!/usr/bin/env bash
# The relevance scorer (discover/relevance, issue 27) on the development
# data, in-process: StableToolBench (2,479 APIs, 765 requests), τ-bench
# airline (14 tools, the 30 tasks that write), the unserved estimate and
# the offered conditions (a request with a few upstreams' tools), each
# split dev/test by the SHA-256 of the request text. Prints a table
# and a JSON summary (see tools/bench/relevance-eval/main.go). The scorer
# is deterministic: the figures are the same on every run.
#
#   bash tools/bench/relevance-eval.sh [--data DIR] [--json FILE] [--set dev|test|all]
#
#   --data DIR   holds tool-discovery/ and tau-airline/ (default:
#                $GROUNDGATE_SHARED/data, else ../shared/data beside the
#                repository)
set -euo pipefail
cd "$(dirname "$0")/../.."
export LC_ALL=C.UTF-8
args=("$@")
has_data=no
for a in "$@"; do case $a in --data | --data=*) has_data=yes ;; esac; done
if [ $has_data = no ]; then
  args+=(--data "${GROUNDGATE_SHARED:-$(dirname "$PWD")/shared}/data")
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/relevance-eval" ./tools/bench/relevance-eval
"$bin/relevance-eval" "${args[@]}"
