#!/usr/bin/env bash
# Finds (or fetches once) Temporal's time-skipping test server and prints the path of an executable
# wrapper for it on stdout (TestWorkflowEnvironment's `existing-path`). The server is the Java
# io.temporal:temporal-test-server from Maven Central, copied with Maven into a per-user cache
# outside the repo, like the temporal CLI. Order: $TEMPORAL_TEST_SERVER, then the cache, then Maven.
set -euo pipefail

version="${TEMPORAL_TEST_SERVER_VERSION:-1.31.0}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/intent-service"
dir="$cache_root/temporal-test-server-$version"
wrapper="$dir/temporal-test-server"
here="$(cd "$(dirname "$0")" && pwd)"

log() { printf '[temporal-test-server] %s\n' "$*" >&2; }

if [ -n "${TEMPORAL_TEST_SERVER:-}" ]; then
  [ -x "$TEMPORAL_TEST_SERVER" ] || { log "TEMPORAL_TEST_SERVER=$TEMPORAL_TEST_SERVER is not executable"; exit 1; }
  echo "$TEMPORAL_TEST_SERVER"
  exit 0
fi
if [ -x "$wrapper" ] && [ -f "$dir/jars/.complete" ]; then
  echo "$wrapper"
  exit 0
fi
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    log "$tool is not installed: the workflow tests need Java >= 17 and Maven to fetch Temporal's test server"
    log "(Debian: apt-get install openjdk-17-jre-headless maven), or set TEMPORAL_TEST_SERVER to an existing one."
    exit 1
  fi
done

mkdir -p "$dir"
exec 9>"$dir/.fetch.lock"
flock 9
if [ -x "$wrapper" ] && [ -f "$dir/jars/.complete" ]; then
  echo "$wrapper"
  exit 0
fi
log "fetching io.temporal:temporal-test-server:$version with Maven into $dir (first run only)"
rm -rf "$dir/jars"
mvn -q -B -f "$here/test-server/pom.xml" -DtestServerVersion="$version" dependency:copy-dependencies \
  -DoutputDirectory="$dir/jars" -Dmdep.includeScope=runtime >&2
touch "$dir/jars/.complete"
cat >"$wrapper" <<WRAP
#!/usr/bin/env bash
# Temporal's time-skipping test server $version (in memory); arguments: PORT [--enable-time-skipping]
exec java -cp "$dir/jars/*" io.temporal.testserver.TestServer "\$@"
WRAP
chmod +x "$wrapper"
log "ready: $wrapper ($(ls "$dir/jars" | wc -l) jars)"
echo "$wrapper"
