#!/usr/bin/env bash
# `npm run lint`: ESLint (its typed rules take most of the time) on one core, beside Prettier and
# the workflow check on the other. Fails when any of them fails; each prints its own findings.
set -uo pipefail
cd "$(dirname "$0")/.."
eslint . &
eslint_pid=$!
prettier --check . && node dist/scripts/check-workflows.js
rest=$?
wait "$eslint_pid"
eslint_rc=$?
if [ "$eslint_rc" -ne 0 ]; then exit "$eslint_rc"; fi
exit "$rest"
