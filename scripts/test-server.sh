#!/usr/bin/env bash
# Finds (or fetches once) Temporal's time-skipping test server and prints the path of an executable
# wrapper for it on stdout (TestWorkflowEnvironment's `existing-path`). The server is the Java
# io.temporal:temporal-test-server from Maven Central, copied with Maven into a per-user cache
# outside the repo, like the temporal CLI. Order: $TEMPORAL_TEST_SERVER, then the cache, then Maven.
#
# The SDK gives the server five seconds (fixed in its core) to accept connections. A JVM that loads
# this server's classes from jars needs about 0.9 s of CPU for that, over 3 s of wall time on two
# busy cores, so the wrapper starts it lean: the client compiler only, the serial collector, and a
# class-data archive of the classes it loads at start (made here once, after the fetch), which
# brings the start to about 0.3 s of CPU.
set -euo pipefail
tag=temporal-test-server
source "$(dirname "$0")/lib/cached-build.sh"

version="${TEMPORAL_TEST_SERVER_VERSION:-1.31.0}"
dir="$cache_root/temporal-test-server-$version"
wrapper="$dir/temporal-test-server"
archive="$dir/classes.jsa"
here="$(cd "$(dirname "$0")" && pwd)"
# The archive's presence marks a wrapper written by this version of the script.
ready="[ -x '$wrapper' ] && [ -f '$dir/jars/.complete' ] && [ -f '$archive.complete' ]"
jvm_flags="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xlog:cds=off -Xlog:cds+dynamic=off"

use_override TEMPORAL_TEST_SERVER
print_if_ready "$ready" "$wrapper"
require_tools "The workflow tests need Java >= 17 and Maven to fetch Temporal's test server (Debian: apt-get install openjdk-17-jre-headless maven), or set TEMPORAL_TEST_SERVER to an existing one." java mvn
lock_cache "$dir"
print_if_ready "$ready" "$wrapper"
if [ ! -f "$dir/jars/.complete" ]; then
  log "fetching io.temporal:temporal-test-server:$version with Maven into $dir (first run only)"
  rm -rf "$dir/jars"
  mvn -q -B -f "$here/test-server/pom.xml" -DtestServerVersion="$version" dependency:copy-dependencies \
    -DoutputDirectory="$dir/jars" -Dmdep.includeScope=runtime >&2
  touch "$dir/jars/.complete"
fi

# The class-data archive: run the server once until it listens, stop it, and the JVM writes the
# classes it loaded. Without an archive (the run failed) the wrapper starts without one.
rm -f "$archive" "$archive.complete"
port=$((20000 + RANDOM % 20000))
# shellcheck disable=SC2086
java $jvm_flags -XX:ArchiveClassesAtExit="$archive" -cp "$dir/jars/*" io.temporal.testserver.TestServer "$port" --enable-time-skipping >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
if [ -s "$archive" ]; then log "class-data archive written: $archive"; else log "no class-data archive (the server did not start on port $port); the wrapper starts without one"; fi
touch "$archive.complete"

cat >"$wrapper" <<WRAP
#!/usr/bin/env bash
# Temporal's time-skipping test server $version (in memory); arguments: PORT [--enable-time-skipping]
archive=()
[ -s "$archive" ] && archive=(-XX:SharedArchiveFile="$archive")
exec java $jvm_flags "\${archive[@]}" -cp "$dir/jars/*" io.temporal.testserver.TestServer "\$@"
WRAP
chmod +x "$wrapper"
log "ready: $wrapper ($(ls "$dir/jars" | wc -l) jars)"
echo "$wrapper"
