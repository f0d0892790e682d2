# Sourced by scripts/test.sh: SeaweedFS's weed, the S3 server the blob
# store's tests run (internal/s3test). It is built from its Go module at
# the version in internal/s3test/weed.version (the module proxy serves its
# source; `go install weed@VERSION` refuses its go.mod's replace
# directives, so it is built inside the downloaded module) into a cache
# folder keyed by that version, once per machine:
#   ${GROUNDGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/groundgate}/weed-VERSION/weed
# internal/s3test looks there (or at $GROUNDGATE_WEED).

# weed_path prints where the pinned weed is (or is to be) built.
weed_path() {
  local version
  version=$(cat internal/s3test/weed.version)
  echo "${GROUNDGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/groundgate}/weed-$version/weed"
}

# weed_build builds the pinned weed unless it is there already.
weed_build() {
  local version path mod start json
  version=$(cat internal/s3test/weed.version)
  path=$(weed_path)
  [ -x "$path" ] && return 0
  echo "== building SeaweedFS weed $version into $path (once per machine: about 11 minutes of CPU)"
  start=$(date +%s)
  # Outside this module (its go.mod would be consulted otherwise), and
  # without the caller's GOFLAGS (-count=1 and the like are not build flags).
  # A failed download says why in the JSON's "Error" (go exits 1 with
  # nothing on stderr): print it rather than let set -e end the caller
  # silently.
  if ! json=$(cd / && GOFLAGS= go mod download -json "github.com/seaweedfs/seaweedfs@$version"); then
    echo "scripts/lib/weed.sh: go mod download github.com/seaweedfs/seaweedfs@$version failed: $(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p')" >&2
    return 1
  fi
  mod=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [ -z "$mod" ]; then
    echo "scripts/lib/weed.sh: go mod download github.com/seaweedfs/seaweedfs@$version gave no folder" >&2
    return 1
  fi
  mkdir -p "$(dirname "$path")"
  (cd "$mod" && GOFLAGS= go build -trimpath -o "$path.tmp" ./weed) || return 1
  mv "$path.tmp" "$path"
  echo "== weed built in $(( $(date +%s) - start )) s"
}
