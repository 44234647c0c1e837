#!/usr/bin/env bash
# `npm run schemathesis [-- st run options]`: installs the pinned Schemathesis once into a virtual
# environment in the per-user cache (PyPI, by pip), then runs it against a stack of real processes
# (dist/scripts/schemathesis.js). Needs python3 with venv (Debian: apt-get install -y python3-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
version=4.32.5
venv="${XDG_CACHE_HOME:-$HOME/.cache}/intent-service/schemathesis-$version"
if [ ! -x "$venv/bin/st" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "schemathesis==$version"
fi
exec node dist/scripts/schemathesis.js "$venv/bin/st" --config-file scripts/schemathesis.toml "$@"
