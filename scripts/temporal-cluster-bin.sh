#!/usr/bin/env bash
# Finds (or builds once) the pinned Temporal server, its sql schema tool and the Web UI server for
# `npm run cluster`, and prints the folder that holds them on stdout:
#   DIR/temporal-server   go.temporal.io/server/cmd/server        (TEMPORAL_SERVER_VERSION, v1.29.1)
#   DIR/temporal-sql-tool go.temporal.io/server/cmd/tools/sql     (same version: schema matches server)
#   DIR/temporal-ui-server github.com/temporalio/ui-server/v2/cmd/server (TEMPORAL_UI_VERSION, v2.42.1)
# The cache is per user, outside the repo, like scripts/temporal-cli.sh. Progress goes to stderr.
set -euo pipefail

server_version="${TEMPORAL_SERVER_VERSION:-v1.29.1}"
ui_version="${TEMPORAL_UI_VERSION:-v2.42.1}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/intent-service"
dir="$cache_root/temporal-cluster-${server_version#v}-ui-${ui_version#v}"

log() { printf '[temporal-cluster] %s\n' "$*" >&2; }

complete() {
  [ -x "$dir/temporal-server" ] && [ -x "$dir/temporal-sql-tool" ] && [ -x "$dir/temporal-ui-server" ]
}

if complete; then
  echo "$dir"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  log "Go is not installed and the Temporal server binaries are not in $dir."
  log "Install Go (>= 1.23): the server, its schema tool and the Web UI are built once from the Go module proxy."
  exit 1
fi

mkdir -p "$dir"
# One build at a time per cache: a second caller waits for the first.
exec 9>"$dir/.build.lock"
flock 9
if complete; then
  echo "$dir"
  exit 0
fi

# build PACKAGE@VERSION NAME: go install into a private GOBIN (the server and the UI server are
# both called `server`), then move the binary to its cache name.
build() {
  local pkg="$1" name="$2" tmp
  tmp="$(mktemp -d "$dir/.gobin.XXXXXX")"
  log "building $pkg into $dir/$name (first run only; takes minutes)"
  local start end
  start=$(date +%s)
  GOBIN="$tmp" GOFLAGS="${GOFLAGS:-} -trimpath" go install "$pkg" >&2
  end=$(date +%s)
  mv "$tmp"/* "$dir/$name"
  rmdir "$tmp"
  log "built $name in $((end - start)) s, $(du -h "$dir/$name" | cut -f1)"
}

[ -x "$dir/temporal-server" ] || build "go.temporal.io/server/cmd/server@$server_version" temporal-server
[ -x "$dir/temporal-sql-tool" ] || build "go.temporal.io/server/cmd/tools/sql@$server_version" temporal-sql-tool
[ -x "$dir/temporal-ui-server" ] || build "github.com/temporalio/ui-server/v2/cmd/server@$ui_version" temporal-ui-server
echo "$dir"
