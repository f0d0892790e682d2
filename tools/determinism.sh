#!/usr/bin/env bash
# Determinism across builds (issue 27, SPEC §16): the relevance tier's
# scores, and the word-vector cosines under them, must be the same bytes
# whatever the build. For each build in BUILDS, `go test -c` builds the test
# binary of each package in PACKAGES (CGO_ENABLED=0 for a cross build), and
# the binary runs in its package's directory (so it finds its testdata):
# natively when this machine can, else under qemu-user (qemu-aarch64 for GOARCH=arm64;
# qemu-x86_64 -cpu max for GOAMD64=v3 on a CPU without it). Every test must
# pass, and the golden tests print the exact bytes they compared
# (GROUNDGATE_PRINT_GOLDEN, testio.PrintGolden): the script compares those
# of each build with the first build's by cmp and fails on any difference,
# or where a package printed on one build and not on another.
#
#   bash tools/determinism.sh              # PACKAGES below
#   bash tools/determinism.sh ./wordvec    # only these packages
#
# DETERMINISM_OUT=DIR keeps the golden outputs in DIR/BUILD/ (by default a
# temporary directory, removed at the end). qemu-user is a Debian package
# (.ci/run installs it when qemu-aarch64 is missing).
set -euo pipefail
cd "$(dirname "$0")/.."

# The packages checked: their tests run on every build, and what their
# golden tests print is compared. PKG=REGEX runs only the tests REGEX
# matches (discover's whole suite is minutes under qemu; its golden test
# covers the tiers end to end).
PACKAGES=(./wordvec ./discover/relevance ./discover=^TestGoldenResults$)
# The builds: a name, then GOARCH and GOAMD64 ("-" where it doesn't apply).
# The first is the reference the others are compared with.
BUILDS=("amd64-v1 amd64 v1" "amd64-v3 amd64 v3" "arm64 arm64 -")

if [ $# -gt 0 ]; then PACKAGES=("$@"); fi

if [ -n "${DETERMINISM_OUT:-}" ]; then
  out=$DETERMINISM_OUT
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
out=$(cd "$out" && pwd) # the tests run elsewhere: an absolute path
hostarch=$(go env GOHOSTARCH)

# qemu ARCH prints the qemu-user binary for a GOARCH, or fails.
qemu() {
  local name
  case $1 in
    amd64) name=qemu-x86_64 ;;
    arm64) name=qemu-aarch64 ;;
    *) name=qemu-$1 ;;
  esac
  command -v "$name" || command -v "$name-static" || {
    echo "determinism: $name is missing (Debian package qemu-user: apt-get install qemu-user)" >&2
    return 1
  }
}

# runner GOARCH BIN prints the command that runs BIN here: nothing when the
# machine runs it natively, else qemu-user for its architecture.
runner() {
  local goarch=$1 bin=$2 q
  if [ "$goarch" = "$hostarch" ] && "$bin" -test.list '^$' >/dev/null 2>&1; then
    return 0
  fi
  q=$(qemu "$goarch") || return 1
  if [ "$goarch" = amd64 ]; then q="$q -cpu max"; fi
  echo "$q"
}

# The packages' import paths and directories, once, and their run patterns.
declare -A runs=()
names=()
for p in "${PACKAGES[@]}"; do
  names+=("${p%%=*}")
  if [[ $p == *=* ]]; then runs[${p%%=*}]=${p#*=}; fi
done
mapfile -t pkgs < <(go list -f '{{.ImportPath}} {{.Dir}}' "${names[@]}")
declare -A runOf=()
for i in "${!names[@]}"; do
  read -r ip _ <<<"${pkgs[$i]}"
  runOf[$ip]=${runs[${names[$i]}]:-.}
done

failed=0
for b in "${BUILDS[@]}"; do
  read -r name goarch goamd64 <<<"$b"
  mkdir -p "$out/$name"
  rm -f "$out/$name"/*.golden
  env=(GOARCH="$goarch")
  if [ "$goamd64" != - ]; then env+=(GOAMD64="$goamd64"); fi
  # cgo off for a cross build (no C toolchain for it); the host's builds
  # keep the default, so GOAMD64=v1 reuses what `go test ./...` compiled.
  if [ "$goarch" != "$hostarch" ]; then env+=(CGO_ENABLED=0); fi
  for p in "${pkgs[@]}"; do
    read -r ip dir <<<"$p"
    file=${ip//\//_}
    bin=$out/$name/$file.test
    env "${env[@]}" go test -c -p 2 -o "$bin" "$ip"
    how=$(runner "$goarch" "$bin")
    echo "== $name: $ip ${how:+(under ${how%% *})}"
    # shellcheck disable=SC2086 # $how is a command and its flags
    if ! (cd "$dir" && GROUNDGATE_PRINT_GOLDEN="$out/$name/$file.golden" $how "$bin" -test.timeout=10m -test.run "${runOf[$ip]}"); then
      echo "determinism: FAIL: $ip's tests on $name" >&2
      failed=1
    fi
    rm -f "$bin"
  done
done

# Compare each build's golden outputs with the first build's.
read -r ref _ <<<"${BUILDS[0]}"
for p in "${pkgs[@]}"; do
  read -r ip _ <<<"$p"
  file=${ip//\//_}.golden
  r=$out/$ref/$file
  if [ ! -f "$r" ]; then
    echo "$ip: no golden output on $ref (its tests call no testio.PrintGolden): tests only"
  fi
  for b in "${BUILDS[@]}"; do
    read -r name _ <<<"$b"
    f=$out/$name/$file
    if [ -f "$r" ] && [ -f "$f" ]; then
      if cmp "$r" "$f"; then
        same="the same as $ref's"
        [ "$name" = "$ref" ] && same="the reference"
        echo "$ip $name: $(wc -c <"$f") bytes from $(grep -c '^=== ' "$f") golden tests, sha256 $(sha256sum <"$f" | cut -c1-16)…, $same"
      else
        echo "determinism: FAIL: $ip's golden output on $name differs from $ref's" >&2
        diff "$r" "$f" | head -20 >&2 || true
        failed=1
      fi
    elif [ -f "$r" ] || [ -f "$f" ]; then
      echo "determinism: FAIL: $ip printed golden output on one of $ref and $name only" >&2
      failed=1
    fi
  done
done

if [ "$failed" -ne 0 ]; then
  echo "determinism: FAIL" >&2
  exit 1
fi
echo "determinism: OK (${#pkgs[@]} packages, ${#BUILDS[@]} builds)"
