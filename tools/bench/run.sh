#!/usr/bin/env bash
# Speed figures of groundgate (issue 15), each beside its baseline measured
# in the same run, with public tools: hyperfine, /usr/bin/time, jq, curl,
# and small Go programs built here from tools/bench/testdata/:
#
#   cli   `groundgate discover` and `groundgate ground` as whole processes
#         (hyperfine, with warm-up) vs boltopen, a Go binary that only
#         opens the same bbolt file; and `groundgate --help`, which opens
#         nothing: what starting the binary costs (its packages' init);
#   http  server CPU per request (utime+stime of the server from
#         /proc/PID/stat before and after N requests; the load client keeps
#         4 connections alive) and throughput, for POST /v1/discover,
#         POST /v1/ground, and tools/call discover and tools/list over
#         /mcp, vs bareecho, an echo/v4 server answering a fixed 630-byte
#         JSON body (MCP vs REST's discover);
#   100k  a registry of 100,000 synthetic capabilities (synth): the bulk
#         load (`registry put` of one file), and the time from
#         `groundgate serve` starting until the alias tier answers, /readyz
#         answers 200 (every tier's index made, the relevance tier's
#         included) and the keyword tier answers, with the RSS then and its
#         peak;
#   grid  the 100-morphism grid vs pandas (go test -bench Grid100VsPandas).
#
# Rows are `measure | value (median, min–max, n) | baseline | ratio | target`.
# Blocks of the two sides alternate (rounds), so that a noisy shared box
# slows both alike.
#
#   bash tools/bench/run.sh [--quick] [--sections cli,http,100k,grid] [--caps N]
#
#   BIN=FILE     the groundgate binary to measure (default: built from this tree)
#   BEFORE=FILE  a second binary, measured interleaved in the same rounds
#                (rows marked [before]); e.g. BEFORE=/tmp/gg_base
#   --quick      fewer rounds, fewer requests, 5,000 capabilities, one grid
#                run: checks that the script works in a few minutes; its
#                figures are rough
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
# Characters, not bytes, in ${#…}; "." as the decimal point everywhere.
export LC_ALL=C.UTF-8

quick=0
sections=cli,http,100k,grid
caps=
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --sections) sections=$2; shift ;;
    --sections=*) sections=${1#*=} ;;
    --caps) caps=$2; shift ;;
    --caps=*) caps=${1#*=} ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
want() { [[ ",$sections," == *",$1,"* ]]; }

# Repetitions. Full: about 8 minutes on a quiet 2-core box.
if [ $quick = 1 ]; then
  cli_rounds=2 cli_runs=3 http_rounds=2 http_n=500 starts=1 grid_count=1 caps=${caps:-5000}
else
  cli_rounds=5 cli_runs=8 http_rounds=6 http_n=3000 starts=3 grid_count=3 caps=${caps:-100000}
fi

missing=
need() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need go golang-go
need jq jq
need curl curl
need /usr/bin/time time
want cli && need hyperfine hyperfine
if [ -n "$missing" ]; then
  echo "bench: missing tools; install them with: apt-get install$missing" >&2
  exit 2
fi
if want grid && ! /usr/bin/python3 -c 'import pandas' 2>/dev/null; then
  echo "bench: the grid section needs pandas for /usr/bin/python3: apt-get install python3-pandas" >&2
  exit 2
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "bench: building the tools (go build) in $tmp"
for t in boltopen bareecho load synth; do
  go build -o "$tmp/$t" "./tools/bench/testdata/$t"
done
if [ -z "${BIN:-}" ]; then
  go build -o "$tmp/groundgate" ./cmd/groundgate
  BIN=$tmp/groundgate
fi
BIN=$(realpath "$BIN")
bins=("$BIN")
labels=("")
if [ -n "${BEFORE:-}" ]; then
  bins+=("$(realpath "$BEFORE")")
  labels+=(" [before]")
fi
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "bench: $b is not an executable" >&2; exit 2; }
  echo "bench: binary $b (sha256 $(sha256sum "$b" | cut -c1-12))"
done
echo "bench: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $( [ $quick = 1 ] && echo quick || echo full) run"

# ---------------------------------------------------------------- stats ---
mkdir -p "$tmp/s"
add() { echo "$2" >>"$tmp/s/$1"; } # add KEY VALUE: one sample
# stat KEY prints "median min max n" of KEY's samples.
stat() {
  sort -g "$tmp/s/$1" | awk '{a[NR]=$1} END {
    if (NR == 0) { print "nan nan nan 0"; exit }
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    print m, a[1], a[NR], NR }'
}
rows=()
# row MEASURE KEY FORMAT UNIT BASEKEY TARGET [inv]: a table row of KEY's
# median and range beside BASEKEY's ("-": no baseline), and their ratio
# (value ÷ baseline; with inv, baseline ÷ value: a speed-up).
row() {
  local measure=$1 key=$2 fmt=$3 unit=$4 base=$5 target=$6 inv=${7:-}
  local m lo hi n value baseline=- ratio=-
  [ -s "$tmp/s/$key" ] || return 0
  read -r m lo hi n < <(stat "$key")
  value="$(printf "$fmt" "$m")$unit ($(printf "$fmt" "$lo")–$(printf "$fmt" "$hi"), n=$n)"
  if [ "$base" != - ] && [ -s "$tmp/s/$base" ]; then
    local bm blo bhi bn
    read -r bm blo bhi bn < <(stat "$base")
    baseline="$(printf "$fmt" "$bm")$unit ($(printf "$fmt" "$blo")–$(printf "$fmt" "$bhi"))"
    if [ "$inv" = inv ]; then
      ratio=$(awk -v a="$m" -v b="$bm" 'BEGIN { printf "%.1f×", b / a }')
    else
      ratio=$(awk -v a="$m" -v b="$bm" 'BEGIN { printf "%.2f×", a / b }')
    fi
  fi
  rows+=("$measure|$value|$baseline|$ratio|$target")
}
# pad WIDTH TEXT: TEXT and spaces to WIDTH characters (printf pads bytes,
# and µ, – and × are two bytes each).
pad() { local s=$2; while [ ${#s} -lt "$1" ]; do s="$s "; done; printf '%s' "$s"; }
table() {
  local r a b c d e
  echo
  for r in "measure|value (median, min–max, n)|baseline (median, min–max)|ratio|target" "${rows[@]}"; do
    IFS='|' read -r a b c d e <<<"$r"
    echo "$(pad 48 "$a") | $(pad 34 "$b") | $(pad 27 "$c") | $(pad 7 "$d") | $e"
  done
  rows=()
}

prompt='Run a momentum strategy on WTI crude and score it by Sharpe ratio'
request='{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil/wti.csv"}'
echo "$request" >"$tmp/request.json"

# ------------------------------------------------------------------ cli ---
if want cli; then
  echo "bench: cli — $cli_rounds rounds of hyperfine, $cli_runs runs per command per round"
  cmds=()
  names=()
  for i in "${!bins[@]}"; do
    db=$tmp/cli$i.db
    id=$("${bins[$i]}" discover --db "$db" "$prompt" | jq -r .id)
    names+=("discover$i" "ground$i" "start$i")
    cmds+=("${bins[$i]} discover --db $db '$prompt'"
      "${bins[$i]} ground --db $db --request $tmp/request.json --discovery $id"
      "${bins[$i]} --help")
  done
  for r in $(seq "$cli_rounds"); do
    args=(-N --warmup 1 --runs "$cli_runs" --export-json "$tmp/hf.json" -n boltopen "$tmp/boltopen $tmp/cli0.db")
    for j in "${!cmds[@]}"; do args+=(-n "${names[$j]}" "${cmds[$j]}"); done
    hyperfine --style none "${args[@]}" >/dev/null 2>"$tmp/hf.err" || { cat "$tmp/hf.err" >&2; exit 1; }
    jq -r '.results[] | .command as $c | .times[] | "\($c) \(. * 1000)"' "$tmp/hf.json" |
      while read -r c v; do add "cli_$c" "$v"; done
  done
  for i in "${!bins[@]}"; do
    row "discover, whole process${labels[$i]}" "cli_discover$i" %.1f " ms" cli_boltopen "≤ 8 ms, ≤ 4× baseline (paper 13.6 ms)"
    row "ground, whole process${labels[$i]}" "cli_ground$i" %.1f " ms" cli_boltopen "≤ 8 ms (paper 13.2 ms)"
    row "start only: --help, no file${labels[$i]}" "cli_start$i" %.1f " ms" cli_boltopen "(the binary's floor)"
  done
  echo
  echo "== whole process (hyperfine -N, warm-up; baseline: boltopen on the same bbolt file)"
  table
fi

# ----------------------------------------------------------------- http ---
# wait_ready URL: until GET URL answers 200 (the keyword tier's index is
# built, so no background build competes with the measurement).
wait_ready() {
  for _ in $(seq 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = 200 ] && return 0
    sleep 0.1
  done
  echo "bench: $1 never answered 200" >&2
  return 1
}

if want http; then
  echo "bench: http — $http_rounds rounds of $http_n requests per target, 4 keep-alive connections"
  "$tmp/bareecho" -addr 127.0.0.1:0 >"$tmp/bare.out" &
  bare_pid=$!
  pids+=("$bare_pid")
  for _ in $(seq 100); do grep -q listening "$tmp/bare.out" && break; sleep 0.05; done
  bare_addr=$(awk '/listening/ { print $2 }' "$tmp/bare.out")
  source "$root/tools/lib/serve.sh"
  token=$(new_token)
  srv_pid=() srv_addr=()
  for i in "${!bins[@]}"; do
    start_groundgate "${bins[$i]}" "$tmp/http$i.db" "$tmp/http$i.log" "$token"
    pids+=("$server")
    srv_pid+=("$server") srv_addr+=("$addr")
    wait_ready "http://$addr/readyz"
    jq -n --arg p "$prompt" '{prompt: $p}' >"$tmp/discover.json"
    id=$(curl -sf -H 'Content-Type: application/json' --data @"$tmp/discover.json" "http://$addr/v1/discover" | jq -r .id)
    jq -n --argjson r "$request" --arg id "$id" '{request: $r, discovery: $id}' >"$tmp/ground$i.json"
  done
  jq -n --arg p "$prompt" '{jsonrpc: "2.0", id: 1, method: "tools/call", params: {name: "discover", arguments: {prompt: $p}}}' >"$tmp/mcp.json"
  echo '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}' >"$tmp/tools.json"
  # measure KEY PID URL BODY [load flags]: one block; samples cpu and rps.
  measure() {
    local key=$1 pid=$2 url=$3 body=$4 out
    shift 4
    out=$("$tmp/load" -url "$url" -body "@$body" -n "$http_n" -c 4 -pid "$pid" "$@")
    add "cpu_$key" "$(sed 's/.*cpu_us=\([^ ]*\).*/\1/' <<<"$out")"
    add "rps_$key" "$(sed 's/.*rps=\([^ ]*\).*/\1/' <<<"$out")"
  }
  for r in $(seq "$http_rounds"); do
    # 4× the requests: /proc/PID/stat counts in 10 ms ticks, and the
    # bare handler's block must span enough of them.
    measure bare "$bare_pid" "http://$bare_addr/v1/discover" "$tmp/discover.json" -n $((4 * http_n))
    for i in "${!bins[@]}"; do
      a=http://${srv_addr[$i]}
      measure "discover$i" "${srv_pid[$i]}" "$a/v1/discover" "$tmp/discover.json"
      measure "ground$i" "${srv_pid[$i]}" "$a/v1/ground" "$tmp/ground$i.json"
      measure "mcp$i" "${srv_pid[$i]}" "$a/mcp" "$tmp/mcp.json" -auth "$token"
      measure "tools$i" "${srv_pid[$i]}" "$a/mcp" "$tmp/tools.json" -auth "$token" -n $((http_n / 4))
    done
  done
  for i in "${!bins[@]}"; do
    row "server CPU per request, discover${labels[$i]}" "cpu_discover$i" %.0f " µs" cpu_bare "≤ 3× baseline"
    row "server CPU per request, ground${labels[$i]}" "cpu_ground$i" %.0f " µs" cpu_bare "≤ 3× baseline"
    row "server CPU per request, MCP discover${labels[$i]}" "cpu_mcp$i" %.0f " µs" "cpu_discover$i" "(baseline: REST discover)"
    row "server CPU per request, MCP tools/list${labels[$i]}" "cpu_tools$i" %.0f " µs" "cpu_discover$i" "(baseline: REST discover)"
    row "throughput, discover${labels[$i]}" "rps_discover$i" %.0f " /s" rps_bare "≥ 0.4× baseline"
    row "throughput, ground${labels[$i]}" "rps_ground$i" %.0f " /s" rps_bare "≥ 0.4× baseline"
  done
  echo
  echo "== HTTP, 4 keep-alive connections, $http_n requests per block (baseline: bareecho, echo/v4 answering 630 bytes)"
  table
  for p in "${srv_pid[@]}" "$bare_pid"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
fi

# ----------------------------------------------------------------- 100k ---
if want 100k; then
  echo "bench: 100k — $caps synthetic capabilities, bulk load once per binary, $starts start(s) each"
  "$tmp/synth" -n "$caps" -terms "$tmp/terms.txt" >"$tmp/entries.json"
  alias=$(sed -n 's/^alias=//p' "$tmp/terms.txt")
  keyword=$(sed -n 's/^keyword=//p' "$tmp/terms.txt")
  for i in "${!bins[@]}"; do
    /usr/bin/time -f '%e %M' -o "$tmp/time$i" "${bins[$i]}" registry put --db "$tmp/big$i.db" "$tmp/entries.json" >/dev/null
    read -r wall kb <"$tmp/time$i"
    add "put$i" "$wall"
    add "putrss$i" "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')"
  done
  # The first start after the bulk load may build what later starts only
  # open (a persisted text index): its times are rows of their own.
  for s in $(seq "$starts"); do
    which=restart
    [ "$s" = 1 ] && which=first
    for i in "${!bins[@]}"; do
      out=$(LOAD_SERVER_LOG=$tmp/start$i.log "$tmp/load" -startup -alias "$alias" -keyword "$keyword" -timeout 5m -- \
        "${bins[$i]}" serve --addr '{addr}' --db "$tmp/big$i.db")
      for f in alias_s ready_s keyword_s; do
        add "${which}_${f}$i" "$(sed "s/.*$f=\([^ ]*\).*/\1/" <<<"$out")"
      done
      for f in rss_mb hwm_mb; do
        add "${f}$i" "$(sed "s/.*$f=\([^ ]*\).*/\1/" <<<"$out")"
      done
    done
  done
  for i in "${!bins[@]}"; do
    for which in first restart; do
      label=$which
      [ "$which" = first ] && label="first start"
      row "$label → alias tier answers${labels[$i]}" "${which}_alias_s$i" %.2f " s" - "≤ 3 s"
      row "$label → /readyz: every tier, relevance's index too${labels[$i]}" "${which}_ready_s$i" %.2f " s" - "≤ 3 s"
      row "$label → keyword tier answers${labels[$i]}" "${which}_keyword_s$i" %.2f " s" - "≤ 3 s"
    done
    row "RSS when both answer (every start)${labels[$i]}" "rss_mb$i" %.0f " MB" - "≤ 300 MB"
    row "peak RSS (VmHWM) by then${labels[$i]}" "hwm_mb$i" %.0f " MB" - "≤ 300 MB"
    row "bulk load, registry put${labels[$i]}" "put$i" %.1f " s" - "≤ 30 s"
    row "bulk load, peak RSS${labels[$i]}" "putrss$i" %.0f " MB" - "-"
  done
  echo
  echo "== $caps capabilities (tools/bench/testdata/synth; alias term \"$alias\", keyword term \"$keyword\")"
  table
fi

# ----------------------------------------------------------------- grid ---
if want grid; then
  echo "bench: grid — go test ./execution -bench Grid100VsPandas -benchtime 1x -count $grid_count (this tree's code)"
  go test ./execution -run '^$' -bench Grid100VsPandas -benchtime 1x -count "$grid_count" >"$tmp/grid.txt" ||
    { cat "$tmp/grid.txt" >&2; exit 1; }
  # metric LABEL: the value before LABEL on each benchmark line.
  metric() { awk -v l="$1" '/^BenchmarkGrid100VsPandas/ { for (i = 2; i <= NF; i++) if ($i == l) print $(i - 1) }' "$tmp/grid.txt"; }
  metric go-s | while read -r v; do add grid_go "$v"; done
  metric pandas-s | while read -r v; do add grid_pandas "$v"; done
  metric speedup-unshared | while read -r v; do add grid_unshared "$v"; done
  metric go-unshared-s | while read -r v; do add grid_unshared_s "$v"; done
  metric pandas-cpu-s | while read -r v; do add grid_pandas_cpu "$v"; done
  metric go-unshared-cpu-s | while read -r v; do add grid_unshared_cpu "$v"; done
  metric speedup-unshared-cpu | while read -r v; do add grid_unshared_cpu_ratio "$v"; done
  row "100-morphism grid in Go (ratio: speed-up)" grid_go %.3f " s" grid_pandas "-" inv
  row "each morphism from scratch (ratio: speed-up)" grid_unshared_s %.2f " s" grid_pandas "-" inv
  row "speed-up, each morphism from scratch" grid_unshared %.1f "×" - "≥ 20×"
  row "each morphism from scratch, CPU (ratio: less)" grid_unshared_cpu %.2f " s" grid_pandas_cpu "-" inv
  row "CPU speed-up, each morphism from scratch" grid_unshared_cpu_ratio %.1f "×" - "≥ 20×"
  echo
  echo "== 100-morphism grid vs pandas (baseline: the same grid in pandas, /usr/bin/python3)"
  table
fi
