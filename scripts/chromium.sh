#!/usr/bin/env bash
# The browser of the browser tests (npm test): Debian's chromium at /usr/bin/chromium, driven by
# playwright-core. When it is missing, installs it with apt-get if this runs as root on a machine
# with apt-get (CI, containers); otherwise says what to install and fails.
set -euo pipefail
browser=/usr/bin/chromium
[ -x "$browser" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "[chromium] installing Debian's chromium with apt-get (first run only)" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
  [ -x "$browser" ] && exit 0
fi
echo "[chromium] the browser tests need Chromium at $browser: install it as root (Debian: apt-get install chromium) and run npm test again" >&2
exit 1
