#!/usr/bin/env bash
# Finds (or builds once) the pinned `temporal` CLI and prints its path on stdout.
# Order: $TEMPORAL_CLI, then the per-user cache, then `go install` into that cache.
# Progress goes to stderr so that `bin=$(scripts/temporal-cli.sh)` works.
set -euo pipefail

version="${TEMPORAL_CLI_VERSION:-v1.5.1}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/intent-service"
bin_dir="$cache_root/temporal-${version#v}"
bin="$bin_dir/temporal"

log() { printf '[temporal-cli] %s\n' "$*" >&2; }

if [ -n "${TEMPORAL_CLI:-}" ]; then
  if [ ! -x "$TEMPORAL_CLI" ]; then
    log "TEMPORAL_CLI=$TEMPORAL_CLI is not an executable file"
    exit 1
  fi
  echo "$TEMPORAL_CLI"
  exit 0
fi

if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  log "Go is not installed and no temporal binary was found at $bin."
  log "Install Go (>= 1.23) or set TEMPORAL_CLI to an existing temporal binary."
  exit 1
fi

mkdir -p "$bin_dir"
# One build at a time per cache: a second caller waits for the first.
exec 9>"$bin_dir/.build.lock"
flock 9
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

log "building github.com/temporalio/cli/cmd/temporal@$version into $bin_dir (first run only; takes several minutes)"
start=$(date +%s)
GOBIN="$bin_dir" GOFLAGS="${GOFLAGS:-} -trimpath" go install "github.com/temporalio/cli/cmd/temporal@$version" >&2
end=$(date +%s)
"$bin" --version >&2
log "built in $((end - start)) s, $(du -h "$bin" | cut -f1) at $bin"
echo "$bin"
