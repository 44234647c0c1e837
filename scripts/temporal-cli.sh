#!/usr/bin/env bash
# Finds (or builds once) the pinned `temporal` CLI and prints its path on stdout.
# Order: $TEMPORAL_CLI, then the per-user cache, then `go install` into that cache.
set -euo pipefail
tag=temporal-cli
source "$(dirname "$0")/lib/cached-build.sh"

version="${TEMPORAL_CLI_VERSION:-v1.5.1}"
bin_dir="$cache_root/temporal-${version#v}"
bin="$bin_dir/temporal"
ready="[ -x '$bin' ] && '$bin' --version >/dev/null 2>&1"

use_override TEMPORAL_CLI
print_if_ready "$ready" "$bin"
require_tools "Install Go (>= 1.25) or set TEMPORAL_CLI to an existing temporal binary." go
lock_cache "$bin_dir"
print_if_ready "$ready" "$bin"
go_build "github.com/temporalio/cli/cmd/temporal@$version" "$bin"
"$bin" --version >&2
echo "$bin"
