#!/usr/bin/env bash
# A learned reranker of the relevance tier's candidates, measured offline
# (issue 27; docs/discovery.md, "A learned reranker: measured, not
# adopted"). relevance-eval --candidates writes every request's 64
# candidates with their features (relevance.Index.Candidates);
# relevance-eval-rerank fits a pairwise logistic ranker on dev halves and
# prints recall@3/5/10 of the tier's order and of the reranked one per set
# and half, the served/unserved separation, a bootstrap interval of the
# gain and the integer weights, for each model of the table in the docs.
# Deterministic: the same figures on every run (about a minute).
#
#   bash tools/bench/relevance-eval-rerank.sh [--data DIR]
#
#   --data DIR   holds tool-discovery/ and tau-airline/ (default:
#                $GROUNDGATE_SHARED/data, else ../shared/data beside the
#                repository)
set -euo pipefail
cd "$(dirname "$0")/../.."
export LC_ALL=C.UTF-8
data="${GROUNDGATE_SHARED:-$(dirname "$PWD")/shared}/data"
while [ $# -gt 0 ]; do
  case $1 in
    --data) data=$2; shift 2 ;;
    --data=*) data=${1#--data=}; shift ;;
    *) echo "usage: $0 [--data DIR]" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/relevance-eval" ./tools/bench/relevance-eval
go build -o "$tmp/rerank" ./tools/bench/relevance-eval-rerank
"$tmp/relevance-eval" --data "$data" --candidates "$tmp/cands.jsonl"
tier=full,lexical,name,title,labels,desc,param,soft,cover,name_cover,ratio,rank,length,group_best,group_cover
sent=$tier,sentence,sentence_lead
run() {
  echo
  echo "== $1"
  shift
  "$tmp/rerank" --l2 0.001 --iters 1500 "$@" "$tmp/cands.jsonl"
}
run "A: the tier's own features, trained on StableToolBench dev" --features "$tier"
run "B (the candidate): A + the sentence features" --features "$sent"
run "C: B, trained on StableToolBench and offered dev" --features "$sent" --train stabletoolbench/served,stabletoolbench/offered-served
run "D: B, then coordinate ascent on dev recall@5" --features "$sent" --ascent
run "E: B, pairs at the 5th place weighted (LambdaRank-like)" --features "$sent" --lambda 5 --iters 800
run "F: every feature (group share, sentence rank too)"
run "G (cross-set): B trained on τ-bench dev only" --features "$sent" --train tau-airline/served
