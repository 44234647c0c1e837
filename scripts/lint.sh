#!/usr/bin/env bash
# `npm run lint`: ESLint (its typed rules take most of the time) on one core, beside Prettier and
# the workflow check on the other. Fails when any of them fails; each prints its own findings.
set -uo pipefail
cd "$(dirname "$0")/.."
# The project's own eslint and prettier, also when this file is run without npm.
PATH="$PWD/node_modules/.bin:$PATH"
eslint . &
eslint_pid=$!
prettier --check . && node dist/scripts/check-workflows.js
rest=$?
wait "$eslint_pid"
eslint_rc=$?
if [ "$eslint_rc" -ne 0 ]; then exit "$eslint_rc"; fi
exit "$rest"
