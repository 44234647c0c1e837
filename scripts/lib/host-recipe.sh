# Sourced by scripts/host-recipe-check.sh: the steps' plumbing (timing, failing loudly, starting and
# stopping processes, HTTP and SQL checks). The caller sets repo, tmp, opt, etc, envfile and logs.

# ---- steps, their wall time, failing --------------------------------------------------------

step_names=()
step_ms=()
current_step=""
step_started=0
run_started=$(date +%s%3N)

now_ms() { date +%s%3N; }

finish_step() {
  [ -n "$current_step" ] || return 0
  step_names+=("$current_step")
  step_ms+=($(($(now_ms) - step_started)))
  current_step=""
}

step() {
  finish_step
  current_step="$1"
  step_started=$(now_ms)
  printf '\n== %s\n' "$1"
}

note() { printf '   %s\n' "$*"; }

seconds() { awk -v ms="$1" 'BEGIN { printf "%.1f s", ms / 1000 }'; }

summary() {
  finish_step
  printf '\nhost recipe: every check passed (HEAD %s)\n' "$rev"
  local i
  for i in "${!step_names[@]}"; do printf '  %9s  %s\n' "$(seconds "${step_ms[$i]}")" "${step_names[$i]}"; done
  printf '  %9s  total\n' "$(seconds $(($(now_ms) - run_started)))"
}

# fail MESSAGE: says which step failed and what it saw, shows the end of every process log, exits 1.
fail() {
  printf '\nhost recipe: FAILED in "%s": %s\n' "$current_step" "$*" >&2
  local log
  for log in "$logs"/*.log; do
    [ -s "$log" ] || continue
    printf -- '--- last lines of %s\n' "${log#"$tmp"/}" >&2
    tail -n 15 "$log" >&2
  done
  exit 1
}

# ---- the service's user, the secrets ---------------------------------------------------------

# The page's intent:intent: a user and group of the machine that is not root (none is added).
svc_user=nobody
svc_group=nogroup

# as_service COMMAND...: COMMAND as the service's user and group alone, the environment kept (as a
# unit's User= and Group=: systemd reads the EnvironmentFile as root, the process runs as the user).
as_service() { setpriv --reuid="$svc_user" --regid="$svc_group" --clear-groups -- "$@"; }

# expect_access PATH "OWNER GROUP MODE": the owner, group and octal mode stat reports.
expect_access() {
  local got
  got="$(stat -c '%U %G %a' "$1")"
  [ "$got" = "$2" ] || fail "$1 is $got, not $2"
  note "$1: $2"
}

# run_secrets_block: the sh block of docs/production.md (the clone's) "Secrets, in order", run as
# root in the clone, with /etc/intent swapped for <tmp>/etc/intent and intent:intent for the
# service's user and group. Its output goes to secrets.out (the token, the gas account's address).
run_secrets_block() {
  local block
  block="$(awk '
    $0 == "### Secrets, in order" { inside = 1; next }
    inside && /^#/ && !/^# / { exit }
    inside && $0 == "```sh" { code = 1; next }
    code && $0 == "```" { exit }
    code { print }' "$opt/docs/production.md")"
  [ -n "$block" ] || fail "docs/production.md has no sh block in \"Secrets, in order\""
  block="${block//\/etc\/intent/$etc}"
  block="$(sed -E "s/\bintent:intent\b/$svc_user:$svc_group/g; s/-g intent /-g $svc_group /g; s/chgrp intent /chgrp $svc_group /g" <<<"$block")"
  printf '%s\n' "$block" >"$logs/secrets.sh"
  (cd "$opt" && exec env -i PATH="$PATH" HOME="$HOME" bash -euo pipefail "$logs/secrets.sh") >"$logs/secrets.out" 2>"$logs/secrets.log" ||
    fail "the page's secrets block failed: $(cat "$logs/secrets.log")"
  note "ran the page's secrets block ($(grep -c . "$logs/secrets.sh") lines, $logs/secrets.sh)"
}

# ---- processes -----------------------------------------------------------------------------

# expect_runs_as NAME: the process (node itself: every wrapper exec'd into it) runs as the service's user.
expect_runs_as() {
  local user
  user="$(stat -c %U "/proc/${pids[$1]}")"
  [ "$user" = "$svc_user" ] || fail "$1 runs as $user, not $svc_user"
}

declare -A pids=()
pg_running=0

# cleanup (the EXIT trap): stops whatever still runs (SIGTERM, SIGKILL after 10 s), PostgreSQL
# last, and removes the temporary folder unless KEEP_HOST_RECIPE=1.
cleanup() {
  local rc=$? name i
  set +e
  for name in "${!pids[@]}"; do kill -TERM "${pids[$name]}" 2>/dev/null; done
  for i in $(seq 100); do
    local alive=0
    for name in "${!pids[@]}"; do kill -0 "${pids[$name]}" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for name in "${!pids[@]}"; do kill -KILL "${pids[$name]}" 2>/dev/null; done
  [ "$pg_running" = 1 ] && as_pg "$pg_bindir/pg_ctl" -D "$tmp/pg/data" -m immediate -w stop >/dev/null 2>&1
  if [ "${KEEP_HOST_RECIPE:-}" = 1 ]; then
    echo "host recipe: kept $tmp" >&2
  else
    rm -rf "$tmp"
  fi
  exit "$rc"
}

# free_ports N: N loopback ports free right now, space-separated (held together, so distinct).
free_ports() {
  node -e '
    const net = require("node:net");
    (async () => {
      const servers = [];
      for (let i = 0; i < Number(process.argv[1]); i++) {
        const s = net.createServer();
        await new Promise((resolve) => s.listen(0, "127.0.0.1", resolve));
        servers.push(s);
      }
      console.log(servers.map((s) => s.address().port).join(" "));
      for (const s of servers) s.close();
    })();' "$1"
}

# in_clone LABEL COMMAND...: runs an npm step of the recipe in the clone, its output in a log.
in_clone() {
  local label="$1" log="$logs/${1// /-}.log" started
  shift
  started=$(now_ms)
  (cd "$opt" && "$@") >"$log" 2>&1 || fail "$label failed (exit $?); its output ends: $(tail -n 20 "$log")"
  note "$label: $(seconds $(($(now_ms) - started)))"
}

# service_cli SCRIPT ARGS...: `npm run --silent SCRIPT ARGS...` in the clone with the environment
# file alone (a clean environment, as a unit's), stdout passed on, stderr appended to cli.log.
service_cli() {
  (cd "$opt" && exec env -i PATH="$PATH" HOME="$HOME" bash -c 'set -a; . "$0"; set +a; exec npm run --silent "$@"' "$envfile" "$@") \
    2>>"$logs/cli.log"
}

# unit_value UNIT KEY: the KEY= lines of the systemd unit UNIT as docs/production.md (the clone's) gives it.
unit_value() {
  awk -v header="# /etc/systemd/system/$1" -v key="$2=" '
    $0 == header { inside = 1; next }
    inside && /^```/ { exit }
    inside && index($0, key) == 1 { print substr($0, length(key) + 1) }' "$opt/docs/production.md"
}

# wait_for_line NAME PATTERN SECONDS: until the process's log has a line matching PATTERN.
wait_for_line() {
  local name="$1" pattern="$2" i
  for i in $(seq $(($3 * 10))); do
    grep -q -- "$pattern" "$logs/$name.log" 2>/dev/null && return 0
    kill -0 "${pids[$name]}" 2>/dev/null || fail "$name exited before it printed \"$pattern\""
    sleep 0.1
  done
  fail "$name printed no \"$pattern\" within $3 s"
}

# start_unit NAME UNIT READY_LINE: starts the API or the worker as its unit does: node from the
# clone with the unit's Environment= and ExecStart= (the page's /usr/bin/node is this machine's
# node), then the environment file read as root (systemd's EnvironmentFile wins over
# Environment=), as the service's user (User=, Group=).
start_unit() {
  local name="$1" unit="$2" environment exec_start
  environment="$(unit_value "$unit" Environment)"
  exec_start="$(unit_value "$unit" ExecStart)"
  [ -n "$exec_start" ] || fail "docs/production.md has no ExecStart= in $unit"
  exec_start="$(command -v node)${exec_start#/usr/bin/node}"
  # shellcheck disable=SC2086 # the unit's lines are word lists
  (cd "$opt" && exec env -i PATH="$PATH" HOME="$tmp/home" $environment bash -c 'set -a; . "$0"; set +a; exec "$@"' \
    "$envfile" setpriv --reuid="$svc_user" --regid="$svc_group" --clear-groups -- $exec_start) >"$logs/$name.log" 2>&1 &
  pids[$name]=$!
  wait_for_line "$name" "$3" 60
  expect_runs_as "$name"
  note "$name (pid ${pids[$name]}, $svc_user): $exec_start"
}

# start_storage_node N PORT: the storage node unit's command with local values (loopback, so no
# TLS and no --host 0.0.0.0), its --public-url the URL STORAGE_NODES gives it.
start_storage_node() {
  local name="node-$1" port="$2"
  mkdir -p "$tmp/var/lib/intent-node-$1" && chown "$svc_user:$svc_group" "$tmp/var/lib/intent-node-$1" # StateDirectory=
  (cd "$opt" && exec env -i PATH="$PATH" HOME="$tmp/home" setpriv --reuid="$svc_user" --regid="$svc_group" --clear-groups -- \
    node dist/storage-node/main.js --host 127.0.0.1 --port "$port" \
    --data "$tmp/var/lib/intent-node-$1" --public-url "http://127.0.0.1:$port" --keys-file "$etc/storage-node-keys") \
    >"$logs/$name.log" 2>&1 &
  pids[$name]=$!
  wait_for_line "$name" "storage-node listening on" 30
  expect_runs_as "$name"
  note "$name (pid ${pids[$name]}) on 127.0.0.1:$port"
}

# stop_process NAME GRACE_S EXPECTED_EXIT: SIGTERM, then the exit code within GRACE_S ("any": not checked).
stop_process() {
  local name="$1" pid="${pids[$1]}" started rc=0 i
  started=$(now_ms)
  kill -TERM "$pid"
  for i in $(seq $(($2 * 10))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    fail "$name was still running $2 s after SIGTERM"
  fi
  wait "$pid" || rc=$?
  unset "pids[$name]"
  [ "$3" = any ] || [ "$rc" = "$3" ] || fail "$name exited $rc after SIGTERM, not $3"
  note "$name stopped (exit $rc) in $(seconds $(($(now_ms) - started)))"
}

# ---- PostgreSQL ----------------------------------------------------------------------------

# as_pg COMMAND...: initdb and postgres refuse root; as root they run as the postgres user (as
# npm run cluster and the tests' throwaway PostgreSQL do).
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# The server binaries, found as npm run cluster finds them: $PG_BINDIR, else `pg_config --bindir`,
# else Debian's /usr/lib/postgresql/15/bin (kept off PATH).
postgres_bindir() {
  local dir="${PG_BINDIR:-}"
  [ -n "$dir" ] || dir="$(pg_config --bindir 2>/dev/null || true)"
  [ -x "$dir/initdb" ] || dir=/usr/lib/postgresql/15/bin
  [ -x "$dir/initdb" ] || fail "no PostgreSQL server binaries (PG_BINDIR, pg_config --bindir, /usr/lib/postgresql/15/bin): apt-get install postgresql-15"
  echo "$dir"
}

# start_postgres DATABASE: initdb (user intent, a random password, scram-sha-256), start on a free
# loopback port with its Unix socket in <tmp>/pg, then create DATABASE.
start_postgres() {
  pg_bindir="$(postgres_bindir)"
  pg_port="$(free_ports 1)"
  pg_password="$(openssl rand -hex 16)"
  mkdir -p "$tmp/pg"
  [ "$(id -u)" != 0 ] || chown postgres: "$tmp/pg"
  (umask 077 && echo "$pg_password" >"$tmp/pg/pwfile")
  [ "$(id -u)" != 0 ] || chown postgres: "$tmp/pg/pwfile"
  as_pg "$pg_bindir/initdb" -D "$tmp/pg/data" --username intent --pwfile "$tmp/pg/pwfile" --auth-local=scram-sha-256 \
    --auth-host=scram-sha-256 --encoding=UTF8 --locale=C >"$logs/initdb.log" 2>&1 || fail "initdb failed"
  rm -f "$tmp/pg/pwfile"
  as_pg "$pg_bindir/pg_ctl" -D "$tmp/pg/data" -l "$tmp/pg/server.log" -w -t 60 \
    -o "-p $pg_port -k $tmp/pg -c listen_addresses=127.0.0.1" start >"$logs/pg_ctl.log" 2>&1 ||
    fail "pg_ctl start failed: $(cat "$tmp/pg/server.log" 2>/dev/null)"
  pg_running=1
  createdb --maintenance-db "$(pg_url postgres)" "$1" 2>"$logs/createdb.log" || fail "createdb $1 failed: $(cat "$logs/createdb.log")"
  note "PostgreSQL $("$pg_bindir/postgres" --version | awk '{ print $3 }') ($pg_bindir) on 127.0.0.1:$pg_port, database $1"
}

pg_url() { echo "postgres://intent:$pg_password@127.0.0.1:$pg_port/$1"; }

stop_postgres() {
  local started
  started=$(now_ms)
  as_pg "$pg_bindir/pg_ctl" -D "$tmp/pg/data" -m fast -w stop >>"$logs/pg_ctl.log" 2>&1 || fail "pg_ctl stop failed"
  pg_running=0
  note "PostgreSQL stopped (fast) in $(seconds $(($(now_ms) - started)))"
}

# expect_sql URL SQL VALUE
expect_sql() {
  local got
  got="$(psql "$1" -Atc "$2" 2>&1)" || fail "psql failed on \"$2\": $got"
  [ "$got" = "$3" ] || fail "\"$2\" gave \"$got\", not \"$3\""
  note "sql: $3 = $2"
}

# expect_db_status EXIT LABEL: `npm run --silent db -- status` in the clone exits EXIT.
expect_db_status() {
  local rc=0
  service_cli db -- status >"$logs/db-status.log" 2>&1 || rc=$?
  [ "$rc" = "$1" ] || fail "db -- status ($2) exited $rc, not $1: $(cat "$logs/db-status.log")"
  note "db -- status ($2): exit $rc, $(head -c 300 "$logs/db-status.log")"
}

# ---- Temporal ------------------------------------------------------------------------------

# start_temporal NAMESPACE: the dev server with temporal-dev.yaml's flags (read by the clone's
# scripts/lib/temporal-dev-server.js) on a free port, headless, its database in <tmp>/temporal.
start_temporal() {
  local binary port args=()
  binary="$(bash "$repo/scripts/temporal-cli.sh")" || fail "no temporal CLI (scripts/temporal-cli.sh)"
  port="$(free_ports 1)"
  mapfile -t args < <(cd "$opt" && node -e '
    const m = require("./dist/scripts/lib/temporal-dev-server.js");
    const [port, namespace, dbFilename] = process.argv.slice(1);
    const s = m.readDevServerSettings({ ip: "127.0.0.1", port: Number(port), namespace, dbFilename, headless: true });
    console.log(m.devServerArgs(s).join("\n"));' "$port" "$1" "$tmp/temporal/temporal.sqlite")
  [ "${#args[@]}" -gt 0 ] || fail "the clone's dist/scripts/lib/temporal-dev-server.js gave no arguments"
  TEMPORAL_VERSION_CHECK_DISABLED=1 "$binary" "${args[@]}" >"$logs/temporal.log" 2>&1 &
  pids[temporal]=$!
  temporal_address="127.0.0.1:$port"
  local i
  for i in $(seq 600); do
    "$binary" operator namespace describe --namespace "$1" --address "$temporal_address" >/dev/null 2>&1 && break
    kill -0 "${pids[temporal]}" 2>/dev/null || fail "the Temporal dev server exited at start"
    [ "$i" != 600 ] || fail "the Temporal dev server did not describe namespace $1 within 60 s"
    sleep 0.1
  done
  "$binary" operator search-attribute list --namespace "$1" --address "$temporal_address" -o json \
    >"$logs/search-attributes.json" 2>&1 || fail "temporal operator search-attribute list failed: $(cat "$logs/search-attributes.json")"
  note "dev server $binary (pid ${pids[temporal]}) on $temporal_address: ${args[*]}"
}

# ---- the chain -----------------------------------------------------------------------------

# start_anvil: the clone's anvil binary (scripts/lib/anvil.ts's anvilBinary) on a free loopback
# port, a block a second, its state in memory; sets chain_url.
start_anvil() {
  local binary port
  binary="$(cd "$opt" && node -e 'console.log(require("./dist/scripts/lib/anvil.js").anvilBinary())')" ||
    fail "the clone has no anvil binary (@foundry-rs/anvil)"
  port="$(free_ports 1)"
  "$binary" --host 127.0.0.1 --port "$port" --block-time 1 >"$logs/anvil.log" 2>&1 &
  pids[anvil]=$!
  wait_for_line anvil "Listening on" 30
  chain_url="http://127.0.0.1:$port"
  note "anvil (pid ${pids[anvil]}) on $chain_url"
}

# ---- HTTP --------------------------------------------------------------------------------

# http METHOD PATH [TOKEN] [JSON]: one request to the API; http_status and <tmp>/response.json.
http() {
  local args=(-sS -o "$tmp/response.json" -w '%{http_code}' -X "$1" "$api$2")
  [ -z "${3:-}" ] || args+=(-H "authorization: Bearer $3")
  [ -z "${4:-}" ] || args+=(-H 'content-type: application/json' --data-binary "$4")
  http_status="$(curl "${args[@]}" 2>"$tmp/curl.err")" || true
  last_request="$1 $2"
}

# json_of JSON EXPRESSION: the value of a JavaScript expression over r = the parsed JSON (strings bare).
json_of() {
  node -e '
    const [text, expression] = process.argv.slice(1);
    let r;
    try { r = JSON.parse(text); } catch { r = undefined; }
    const v = new Function("r", `return (${expression});`)(r);
    process.stdout.write(typeof v === "string" ? v : String(JSON.stringify(v)));' "$1" "$2" 2>/dev/null || echo "<no value>"
}

response() { cat "$tmp/response.json" 2>/dev/null; }

# expect_http STATUS METHOD PATH [TOKEN] [JSON]
expect_http() {
  local status="$1"
  shift
  http "$@"
  [ "$http_status" = "$status" ] || fail "$last_request answered $http_status, not $status: $(response) $(cat "$tmp/curl.err")"
  note "$last_request: $http_status"
}

# expect_field EXPRESSION VALUE: on the last answer's body.
expect_field() {
  local got
  got="$(json_of "$(response)" "$1")"
  [ "$got" = "$2" ] || fail "$last_request: $1 is \"$got\", not \"$2\"; body: $(response)"
  note "  $1 = $2"
}

# http_field_is METHOD PATH TOKEN EXPRESSION VALUE: whether the answer is 200 with that value.
http_field_is() {
  http "$1" "$2" "$3"
  [ "$http_status" = 200 ] && [ "$(json_of "$(response)" "$4")" = "$5" ]
}

# eventually SECONDS LABEL COMMAND...: until COMMAND succeeds (read models catch up a moment later).
eventually() {
  local seconds="$1" label="$2" deadline
  shift 2
  deadline=$(($(now_ms) + seconds * 1000))
  until "$@"; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "$label: not within $seconds s; last: $last_request answered $http_status $(response)"
    sleep 0.25
  done
  note "$label"
}
