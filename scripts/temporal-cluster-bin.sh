#!/usr/bin/env bash
# Finds (or builds once) the pinned Temporal server, its sql schema tool and the Web UI server for
# `npm run cluster`, and prints the folder that holds them on stdout:
#   DIR/temporal-server   go.temporal.io/server/cmd/server        (TEMPORAL_SERVER_VERSION, v1.29.1)
#   DIR/temporal-sql-tool go.temporal.io/server/cmd/tools/sql     (same version: schema matches server)
#   DIR/temporal-ui-server github.com/temporalio/ui-server/v2/cmd/server (TEMPORAL_UI_VERSION, v2.42.1)
# The cache is per user, outside the repo, like scripts/temporal-cli.sh.
set -euo pipefail
tag=temporal-cluster
source "$(dirname "$0")/lib/cached-build.sh"

server_version="${TEMPORAL_SERVER_VERSION:-v1.29.1}"
ui_version="${TEMPORAL_UI_VERSION:-v2.42.1}"
dir="$cache_root/temporal-cluster-${server_version#v}-ui-${ui_version#v}"
ready="[ -x '$dir/temporal-server' ] && [ -x '$dir/temporal-sql-tool' ] && [ -x '$dir/temporal-ui-server' ]"

print_if_ready "$ready" "$dir"
require_tools "Install Go (>= 1.25): the server, its schema tool and the Web UI are built once from the Go module proxy." go
lock_cache "$dir"
print_if_ready "$ready" "$dir"
[ -x "$dir/temporal-server" ] || go_build "go.temporal.io/server/cmd/server@$server_version" "$dir/temporal-server"
[ -x "$dir/temporal-sql-tool" ] || go_build "go.temporal.io/server/cmd/tools/sql@$server_version" "$dir/temporal-sql-tool"
[ -x "$dir/temporal-ui-server" ] || go_build "github.com/temporalio/ui-server/v2/cmd/server@$ui_version" "$dir/temporal-ui-server"
echo "$dir"
