# Sourced by the scripts that find or build a pinned tool once into the per-user cache outside the
# repo (temporal-cli.sh, temporal-cluster-bin.sh, test-server.sh). Progress goes to stderr so that
# `path=$(bash scripts/X.sh)` works; the caller sets `tag` (its log prefix) before sourcing.

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/intent-service"

log() { printf '[%s] %s\n' "$tag" "$*" >&2; }

# use_override VAR: when $VAR is set, print it and exit (0 if it is an executable file, else 1).
use_override() {
  local name="$1" value="${!1:-}"
  [ -n "$value" ] || return 0
  if [ ! -x "$value" ]; then
    log "$name=$value is not an executable file"
    exit 1
  fi
  echo "$value"
  exit 0
}

# print_if_ready CHECK RESULT: when the command CHECK succeeds, print RESULT and exit 0.
print_if_ready() {
  if eval "$1"; then
    echo "$2"
    exit 0
  fi
}

# require_tools HINT TOOL...: exit 1 with HINT unless every TOOL is on PATH.
require_tools() {
  local hint="$1" tool
  shift
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      log "$tool is not installed. $hint"
      exit 1
    fi
  done
}

# lock_cache DIR: one build at a time per cache folder; a second caller waits for the first
# (then calls print_if_ready again: the first may have built it).
lock_cache() {
  mkdir -p "$1"
  exec 9>"$1/.build.lock"
  flock 9
}

# go_build PACKAGE@VERSION DEST: `go install` into a private GOBIN (two of our packages build a
# binary called `server`), then move the binary to DEST.
go_build() {
  local pkg="$1" dest="$2" tmp start end
  tmp="$(mktemp -d "$(dirname "$dest")/.gobin.XXXXXX")"
  log "building $pkg into $dest (first run only; takes minutes)"
  start=$(date +%s)
  GOBIN="$tmp" GOFLAGS="${GOFLAGS:-} -trimpath" go install "$pkg" >&2
  end=$(date +%s)
  mv "$tmp"/* "$dest"
  rmdir "$tmp"
  log "built $(basename "$dest") in $((end - start)) s, $(du -h "$dest" | cut -f1)"
}
