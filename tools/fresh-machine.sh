#!/usr/bin/env bash
# The README's two commands on a fresh machine, as a stranger runs them:
# a minimal Debian 12 made with debootstrap, holding only what a new
# machine of this kind has (Go, gcc, git, curl, Node.js with npm, the
# machine's CA certificates), a clone of this repository's HEAD (what is
# committed, nothing else) and shared/ beside it, read-only. In it:
#
#   bash scripts/test.sh             installs what the tests need, then go test ./...
#   go run ./cmd/groundgate serve    /readyz, a discovery and /ui/ answer 200
#
# Everything the tests need beyond that (z3, cvc5, PostgreSQL, Python with
# pandas, numpy and cryptography, jq, SeaweedFS's weed, the npm MCP
# servers) must come from scripts/test.sh. Needs root (debootstrap,
# chroot, mounts), network to Debian's mirror, the Go module proxy and npm,
# about 5 GB of disk and 20–25 minutes on 2 cores (weed alone takes 5).
# The chroot shares this machine's network: 127.0.0.1:8080 must be free.
#
#   bash tools/fresh-machine.sh [DIR]    (default: a new folder under /var/tmp;
#                                         removed at the end unless KEEP=1)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
shared=${GROUNDGATE_SHARED:-$(dirname "$repo")/shared}
[ "$(id -u)" -eq 0 ] || { echo "fresh-machine: run as root (debootstrap, chroot, mount)" >&2; exit 2; }
[ -d "$shared/data" ] || { echo "fresh-machine: no shared/ at $shared (set GROUNDGATE_SHARED)" >&2; exit 2; }
if (exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null; then
  echo "fresh-machine: 127.0.0.1:8080 is taken; the README's server needs it" >&2
  exit 2
fi
# shellcheck source=scripts/lib/apt.sh
. scripts/lib/apt.sh
command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap

root=${1:-$(mktemp -d /var/tmp/groundgate-fresh.XXXXXX)}
chmod 755 "$root" # mktemp's 0700 would keep apt's _apt user out
mounts=()
cleanup() {
  local p m
  # Whatever still runs in the chroot (a server the check left) dies first.
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  for ((m = ${#mounts[@]} - 1; m >= 0; m--)); do umount -l "${mounts[m]}" 2>/dev/null || true; done
  rm -f "$root.debootstrap.log"
  # Never remove through a mount that is still there (/dev, shared/).
  if awk -v r="$root/" 'index($2, r) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
    echo "fresh-machine: something is still mounted under $root; left as it is" >&2
  elif [ "${KEEP:-0}" != 1 ]; then
    chmod -R u+w "$root" 2>/dev/null || true # the Go module cache is read-only
    rm -rf "$root"
  else
    echo "fresh-machine: kept $root"
  fi
}
trap cleanup EXIT
mnt() { mount "$@"; mounts+=("${*: -1}"); }

echo "== debootstrap bookworm into $root"
debootstrap --variant=minbase --include=ca-certificates,git,gcc,libc6-dev,curl,procps \
  bookworm "$root" http://deb.debian.org/debian >"$root.debootstrap.log" 2>&1 ||
  { tail -20 "$root.debootstrap.log" >&2; exit 1; }
# This machine's apt sources (bookworm, its updates and security), where
# it has them in deb822 form; otherwise debootstrap's own.
if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
  rm -f "$root/etc/apt/sources.list"
  cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/"
fi
# What a new machine has: Go, Node.js with npm, and its trust store (a
# network's egress CA among them).
mkdir -p "$root/usr/local" "$root/usr/lib/node_modules"
cp -a "$(go env GOROOT)" "$root/usr/local/go"
cp "$(command -v node)" "$root/usr/bin/node"
cp -a "$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")" "$root/usr/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/bin/npx"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
[ -f /etc/npmrc ] && cp /etc/npmrc "$root/etc/npmrc"
[ -f "$HOME/.npmrc" ] && cp "$HOME/.npmrc" "$root/root/.npmrc"
cp /etc/resolv.conf "$root/etc/resolv.conf"

mnt -t proc proc "$root/proc"
mnt -t sysfs sys "$root/sys"
mnt --bind /dev "$root/dev"
mnt --bind /dev/pts "$root/dev/pts"
mnt -t tmpfs tmpfs "$root/dev/shm"
mkdir -p "$root/work/shared"
mnt --bind "$shared" "$root/work/shared"
mount -o remount,bind,ro "$root/work/shared"
git clone -q "$repo" "$root/work/main"
echo "== fresh clone of $(git -C "$repo" rev-parse --short HEAD), shared/ read-only beside it"

# The chroot's environment: a login's, plus this machine's CA and proxy
# settings when it has them.
env=(HOME=/root LANG=C.UTF-8 TERM=dumb PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
for k in NODE_EXTRA_CA_CERTS SSL_CERT_FILE SSL_CERT_DIR CURL_CA_BUNDLE REQUESTS_CA_BUNDLE GOPROXY GOSUMDB HTTPS_PROXY HTTP_PROXY NO_PROXY https_proxy http_proxy no_proxy; do
  [ -n "${!k:-}" ] && env+=("$k=${!k}")
done
in_root() { chroot "$root" env -i "${env[@]}" bash -c "$1"; }

echo "== the README's test command: bash scripts/test.sh"
start=$(date +%s)
in_root 'cd /work/main && bash scripts/test.sh'
echo "== bash scripts/test.sh passed in $(($(date +%s) - start)) s"

echo "== the README's server: go run ./cmd/groundgate serve"
in_root 'cd /work/main && exec go run ./cmd/groundgate serve >/tmp/serve.log 2>&1' &
disown # the cleanup kills it; no "Killed" notice
ok=no
for _ in $(seq 180); do
  if in_root 'curl -sf -o /dev/null 127.0.0.1:8080/readyz' 2>/dev/null; then ok=yes; break; fi
  sleep 1
done
[ $ok = yes ] || { echo "fresh-machine: /readyz did not answer within 3 minutes" >&2; cat "$root/tmp/serve.log" >&2; exit 1; }
in_root '
  set -e
  for check in "GET /readyz" "POST /v1/discover" "GET /ui/"; do
    set -- $check
    if [ "$1" = POST ]; then
      code=$(curl -s -o /dev/null -w "%{http_code}" -X POST "127.0.0.1:8080$2" -H "Content-Type: application/json" \
        -d "{\"prompt\": \"momentum strategy on wti crude scored by sharpe ratio\"}")
    else
      code=$(curl -s -o /dev/null -w "%{http_code}" "127.0.0.1:8080$2")
    fi
    echo "   $check: $code"
    [ "$code" = 200 ]
  done'
echo "fresh-machine: ok (both README commands on a fresh Debian 12)"
