# Sourced by scripts/test.sh and .ci/run: installing Debian packages that
# a check needs.

# apt_install PKG... installs the Debian packages PKG... with apt-get, as
# root or through sudo. Where it can't (no apt-get, not root and no sudo),
# it says which packages are missing and returns 1.
apt_install() {
  local sudo=""
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "missing (Debian package names): $*; install them (no apt-get here)" >&2
    return 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "missing (Debian package names): $*; run as root, or with sudo, to install them" >&2
      return 1
    fi
    sudo=sudo
  fi
  echo "== apt-get install $*"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq || return 1
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
