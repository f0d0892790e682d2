#!/usr/bin/env bash
# The README's test command: installs what the tests need when it is
# missing, then runs `go test ./...` with any arguments passed on
# (bash scripts/test.sh -count=1 -v).
#
# The tests call outside tools: the SMT solvers z3 and cvc5 (the policy
# tests run every corpus through both), PostgreSQL and SeaweedFS (the
# store's PostgreSQL + S3 engine: internal/pgtest, internal/s3test),
# Python with pandas and numpy (the strategy engine's reference) and with
# cryptography (the independent DSSE verifier), and curl, jq and openssl
# (the documentation's commands, run by docs/docs_test.go), and node with
# npm (the real MCP servers the gateway tests run: tools/package.json pins
# them, tools/package-lock.json locks them). Each missing one is installed
# from its Debian package with apt-get (as root, or through sudo:
# scripts/lib/apt.sh); SeaweedFS's weed is built from its Go module once
# per machine (scripts/lib/weed.sh); then, when tools/node_modules is
# missing or older than the lockfile, `npm ci --prefix tools` installs the
# locked packages (node_modules is not committed).
#
# Then GROUNDGATE_REQUIRE_TOOLS=1: a test whose tool is still missing fails
# instead of skipping. GROUNDGATE_PYTHON (default /usr/bin/python3, the
# interpreter the python3-* packages install into, rather than a pyenv
# python3 earlier on the PATH) is the Python the tests run.
set -euo pipefail
cd "$(dirname "$0")/.."

export GROUNDGATE_PYTHON=${GROUNDGATE_PYTHON:-/usr/bin/python3}

# missing prints the Debian packages of the tools that are missing.
missing() {
  local pkgs=() tool
  if ! "$GROUNDGATE_PYTHON" -c 'import pandas, numpy' >/dev/null 2>&1; then
    pkgs+=(python3 python3-pandas python3-numpy)
  fi
  if ! "$GROUNDGATE_PYTHON" -c 'import cryptography' >/dev/null 2>&1; then
    pkgs+=(python3-cryptography)
  fi
  for tool in z3 cvc5 curl jq openssl git; do
    command -v "$tool" >/dev/null 2>&1 || pkgs+=("$tool")
  done
  # PostgreSQL (internal/pgtest starts a private cluster per test binary):
  # Debian puts initdb and postgres in /usr/lib/postgresql/VERSION/bin,
  # not on the PATH.
  if ! command -v initdb >/dev/null 2>&1 && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
    pkgs+=(postgresql)
  fi
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
  echo "${pkgs[*]:-}"
}

# shellcheck source=scripts/lib/apt.sh
. scripts/lib/apt.sh
need=$(missing)
if [ -n "$need" ]; then
  # shellcheck disable=SC2086 # $need is a list of package names
  if ! apt_install $need; then
    echo "scripts/test.sh: could not install $need (or set GROUNDGATE_PYTHON to a python3 with pandas, numpy and cryptography)" >&2
    exit 1
  fi
  still=$(missing)
  if [ -n "$still" ]; then
    echo "scripts/test.sh: still missing after apt-get install: $still (GROUNDGATE_PYTHON=$GROUNDGATE_PYTHON)" >&2
    exit 1
  fi
fi

# SeaweedFS's weed, the S3 server of the blob store's tests
# (internal/s3test): built once per machine from its Go module at the
# pinned version, into a cache folder (scripts/lib/weed.sh), unless
# GROUNDGATE_WEED names one.
if [ -z "${GROUNDGATE_WEED:-}" ]; then
  # shellcheck source=scripts/lib/weed.sh
  . scripts/lib/weed.sh
  weed_build
fi

# The npm packages the tests run (server-everything, server-filesystem):
# installed from the lockfile, without install scripts.
if [ ! -f tools/node_modules/.package-lock.json ] || [ tools/package-lock.json -nt tools/node_modules/.package-lock.json ]; then
  echo "== npm ci --prefix tools (node $(node --version))"
  npm ci --prefix tools --ignore-scripts --no-audit --no-fund
fi

export GROUNDGATE_REQUIRE_TOOLS=1
echo "== go test ./... ${*:+$* }(GROUNDGATE_REQUIRE_TOOLS=1 GROUNDGATE_PYTHON=$GROUNDGATE_PYTHON)"
exec go test ./... "$@"
