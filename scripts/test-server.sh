#!/usr/bin/env bash
# Finds (or fetches once) Temporal's time-skipping test server and prints the path of an executable
# wrapper for it on stdout (TestWorkflowEnvironment's `existing-path`). The server is the Java
# io.temporal:temporal-test-server from Maven Central, copied with Maven into a per-user cache
# outside the repo, like the temporal CLI. Order: $TEMPORAL_TEST_SERVER, then the cache, then Maven.
set -euo pipefail
tag=temporal-test-server
source "$(dirname "$0")/lib/cached-build.sh"

version="${TEMPORAL_TEST_SERVER_VERSION:-1.31.0}"
dir="$cache_root/temporal-test-server-$version"
wrapper="$dir/temporal-test-server"
here="$(cd "$(dirname "$0")" && pwd)"
ready="[ -x '$wrapper' ] && [ -f '$dir/jars/.complete' ]"

use_override TEMPORAL_TEST_SERVER
print_if_ready "$ready" "$wrapper"
require_tools "The workflow tests need Java >= 17 and Maven to fetch Temporal's test server (Debian: apt-get install openjdk-17-jre-headless maven), or set TEMPORAL_TEST_SERVER to an existing one." java mvn
lock_cache "$dir"
print_if_ready "$ready" "$wrapper"
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
