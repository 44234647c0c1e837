#!/usr/bin/env bash
# npm run check:host-recipe: follows docs/production.md "A host, from a fresh machine" and
# docs/backup.md "The read model" from a fresh clone, on this one machine, and fails loudly where the
# pages and the service disagree. Everything lives in one temporary folder, removed at the end:
#
#   <tmp>/opt/intent-service   the clone of this repository's HEAD: npm ci, build, prune --omit=dev
#   <tmp>/etc/intent           service.env and the secrets of production.md "Secrets, in order"
#   <tmp>/var/lib              each storage node's --data folder
#   <tmp>/pg                   a throwaway PostgreSQL 15 (the read model and its restored copy)
#   <tmp>/temporal             the Temporal dev server's database
#   <tmp>/log                  every process's output (shown when a check fails)
#
# The Temporal service is the dev server `npm start` uses (temporal CLI v1.5.1 from the per-user
# cache, scripts/temporal-cli.sh), started from this checkout: the production server binary
# (`npm run cluster:build`) is a separate Go build of minutes, and the pruned clone holds no Go
# tooling anyway. The API, the worker and the storage nodes are started as the page's systemd units
# start them: node directly, from the clone, with a clean environment plus the environment file
# (the API's and the worker's Environment= and ExecStart= lines are read from the page itself).
# The secrets are made by the page's own commands (the sh block of "Secrets, in order", run as root
# with the folder and the user swapped), so the check needs root: the API, the worker and the
# storage nodes run as a second user, nobody:nogroup, standing in for the page's intent:intent (the
# check adds no user to the machine), and tokens are issued as root into a file that user only
# reads. The chain is anvil from the clone's @foundry-rs/anvil, on a free port, a block a second:
# a deposit to an address the API derives from the public key, seen by the watcher; the worker
# started again on the restored read model checks that the seed derives that address.
#
# Needs: root, git, node/npm (and the npm registry, for npm ci), PostgreSQL 15 server and client
# binaries, openssl, curl, setpriv. Uses only what HEAD holds: commit first. Exit 0 only if every check passed.
# KEEP_HOST_RECIPE=1 keeps the temporary folder (its path is printed) for a look after a failure.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
source "$repo/scripts/lib/host-recipe.sh"

[ "$(id -u)" = 0 ] || { echo "host recipe: run it as root: it makes the secrets as root and runs the service as another user" >&2; exit 2; }
rev="$(git -C "$repo" rev-parse HEAD)"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  note "the working tree has uncommitted changes: the check runs HEAD ($rev), without them"
fi

tmp="$(mktemp -d -t host-recipe.XXXXXX)"
chmod 0711 "$tmp" # as root, PostgreSQL runs as the postgres user, which must reach <tmp>/pg
opt="$tmp/opt/intent-service"
etc="$tmp/etc/intent"
envfile="$etc/service.env"
logs="$tmp/log"
mkdir -p "$tmp/opt" "$tmp/etc" "$tmp/var/lib" "$tmp/backup" "$tmp/temporal" "$logs"
mkdir -p "$tmp/home" && chown "$svc_user:$svc_group" "$tmp/home" # the service user's HOME
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------
step "clone, npm ci, npm run build, npm prune --omit=dev (production.md \"Build\")"
git clone --quiet "$repo" "$opt"
git -C "$opt" checkout --quiet --detach "$rev" # the page's `git checkout <release tag>`
in_clone "npm ci" npm ci
in_clone "npm run build" npm run build
in_clone "npm prune --omit=dev" npm prune --omit=dev
[ -f "$opt/dist/api/main.js" ] && [ -f "$opt/dist/worker/main.js" ] && [ -f "$opt/dist/storage-node/main.js" ] ||
  fail "the build left no dist/api, dist/worker or dist/storage-node entry point in the clone"
# (mocha: a dev dependency nothing else needs; typescript stays, an optional peer of viem's)
[ ! -d "$opt/node_modules/mocha" ] || fail "npm prune --omit=dev left the dev dependencies (node_modules/mocha)"

# ---------------------------------------------------------------------------------------------
step "PostgreSQL 15: initdb, start, the service database"
start_postgres intent
database_url="$(pg_url intent)"

# ---------------------------------------------------------------------------------------------
step "Temporal dev server (namespace intent, search attributes of temporal-dev.yaml)"
start_temporal intent
for attribute in ExecutionState ExecutionWallet; do
  registered="$(grep -o "\"$attribute\"[^,}]*" "$logs/search-attributes.json" || true)"
  grep -qi keyword <<<"$registered" ||
    fail "the namespace lacks the search attribute $attribute (Keyword) production.md requires; it has: $(cat "$logs/search-attributes.json")"
  note "search attribute $registered"
done

# ---------------------------------------------------------------------------------------------
step "a local chain: anvil from the clone's node_modules, a block a second"
start_anvil

# ---------------------------------------------------------------------------------------------
step "secrets, in the page's order and with its owners and modes (production.md \"Secrets, in order\")"
run_secrets_block
expect_access "$etc" "root $svc_group 750"
expect_access "$etc/storage-node-keys" "root $svc_group 640"
expect_access "$etc/deposit-seed" "$svc_user $svc_group 600"
expect_access "$etc/gas-account.key" "$svc_user $svc_group 600"
expect_access "$etc/tokens.json" "root $svc_group 640"
ops_token="$(tail -n 1 "$logs/secrets.out")"
[[ "$ops_token" == ist_* ]] || fail "the page's token -- create printed no token: $(cat "$logs/secrets.out")"
gas_address="$(grep -E '^0x[0-9a-fA-F]{40}$' "$logs/secrets.out" | tail -n 1)"
[ -n "$gas_address" ] || fail "the page's gas account commands printed no address: $(cat "$logs/secrets.out")"
note "gas account $gas_address"

# ---------------------------------------------------------------------------------------------
step "settings: the environment file (production.md \"Settings and processes\")"
read -r node1 node2 node3 api_port operator_port metrics_port < <(free_ports 6)
# The page's file with local values: no TLS (the dev server and the nodes speak plain text here,
# so no TEMPORAL_TLS_* and no STORAGE_NODE_CA_FILE), the local anvil chain, and ports picked free
# on this shared machine (OPERATOR_PORT and WORKER_METRICS_PORT too, whose defaults another stack
# may hold).
cat >"$envfile" <<EOF
TEMPORAL_ADDRESS=$temporal_address
TEMPORAL_NAMESPACE=intent
TEMPORAL_TASK_QUEUE=intent-service
STORAGE_NODES=http://127.0.0.1:$node1,http://127.0.0.1:$node2,http://127.0.0.1:$node3
STORAGE_NODE_KEYS_FILE=$etc/storage-node-keys
API_TOKENS_FILE=$etc/tokens.json
DATABASE_URL=$database_url
DEPOSIT_SEED_FILE=$etc/deposit-seed
DEPOSIT_XPUB_FILE=$etc/deposit-xpub
CHAIN_RPC_URL=$chain_url
REFUND_GAS_KEY_FILE=$etc/gas-account.key
HOST=127.0.0.1
PORT=$api_port
OPERATOR_HOST=127.0.0.1
OPERATOR_PORT=$operator_port
WORKER_METRICS_PORT=$metrics_port
EOF
chgrp "$svc_group" "$envfile" && chmod 0640 "$envfile"
api="http://127.0.0.1:$api_port"

# ---------------------------------------------------------------------------------------------
step "db -- status, db -- migrate, db -- status (production.md \"Settings\")"
expect_db_status 1 "a new database: every migration pending"
grep -q '"pending":\["0001' "$logs/db-status.log" || fail "db -- status on a new database listed no pending migrations: $(cat "$logs/db-status.log")"
service_cli db -- migrate >"$logs/db-migrate.log" 2>&1 || fail "db -- migrate failed: $(cat "$logs/db-migrate.log")"
expect_db_status 0 "after migrate"

# ---------------------------------------------------------------------------------------------
step "3 storage nodes, the worker, the API (production.md \"Processes\")"
for n in 1 2 3; do
  port_var="node$n"
  start_storage_node "$n" "${!port_var}"
done
start_unit worker intent-worker.service "worker polling task queue intent-service"
start_unit api intent-api.service "api listening"
expect_http 200 GET /readyz
expect_http 200 GET /healthz

# ---------------------------------------------------------------------------------------------
step "tokens issued as root while the service runs, into a file the service only reads"
! as_service test -w "$etc/tokens.json" || fail "the service's user may write the tokens file"
as_service test -r "$etc/tokens.json" || fail "the service's user cannot read the tokens file"
whitelist_token="$(service_cli token -- create --id wl-admin --scope 'whitelist:*')"
refunds_token="$(service_cli token -- create --id refund-reader --scope refunds:read)"
[ -n "$whitelist_token" ] && [ -n "$refunds_token" ] || fail "npm run token printed no token"
expect_access "$etc/tokens.json" "root $svc_group 640"
expect_http 200 GET "/api/v1/refunds?state=due" "$refunds_token" # the API read the new token

# ---------------------------------------------------------------------------------------------
step "drive it: prepare, deposit, sign and submit (SIGNING), a whitelist batch, a refused deposit"
keys="$(service_cli sign -- keygen)"
wallet="$(json_of "$keys" 'r.publicKeyBase58')"
secret="$(json_of "$keys" 'r.secretKey')"
intent='{"swap":"USDC->ETH","amount":"10"}'
expect_http 201 POST "/api/v1/executions/$wallet" "$ops_token" '{"executionId":"recipe-1","intent":'"$intent"',"ttlSeconds":3600}'
expect_http 200 POST "/api/v1/executions/$wallet/recipe-1/deposit" "$ops_token" '{"txHash":"0xfeed","chain":"solana","amount":"10"}'
expect_field 'r.result.status' OPERATION_PENDING
body="$(service_cli sign -- --secret-key "$secret" --wallet "$wallet" --execution-id recipe-1 --domain localhost --intent "$intent")"
expect_http 200 POST "/api/v1/executions/$wallet/submit" "" "$body"
expect_field 'r.result.status' SIGNING
expect_http 200 GET "/api/v1/executions/$wallet/recipe-1"
expect_field 'r.result.status' SIGNING
entry=0x52908400098527886E0F7030069857D2E4169EE7
expect_http 200 POST /chain/whitelists/ "$whitelist_token" \
  '[{"op_type":"add_entry","kind":"developer","entry":"'$entry'"},{"op_type":"remove_entry","kind":"user","entry":"'$entry'"}]'
expect_field 'r.length' 2 # one confirmation per change
# Money owed: an execution that expired without a deposit refuses the one reported after it (409),
# and the refusal becomes a refunds ledger row. Reported on another chain than the worker's, the
# refund sweep holds it for a person, `off-chain` (runbooks.md "A refund is held").
expect_http 201 POST "/api/v1/executions/$wallet" "$ops_token" '{"executionId":"recipe-2","intent":'"$intent"',"ttlSeconds":1}'
eventually 30 "recipe-2 EXPIRED" http_field_is GET "/api/v1/executions/$wallet/recipe-2" "" 'r.result.status' EXPIRED
expect_http 409 POST "/api/v1/executions/$wallet/recipe-2/deposit" "$ops_token" '{"txHash":"0xlate","chain":"solana","amount":"7"}'
refunds_query="/api/v1/refunds?wallet=$wallet&executionId=recipe-2"
eventually 30 "the refunds ledger row of recipe-2, held off-chain" http_field_is GET "$refunds_query" "$refunds_token" \
  'r.result.length + " " + r.result[0].state + " " + r.result[0].holdReason + " " + r.result[0].txHash + " " + r.result[0].amount' \
  "1 held off-chain 0xlate 7"
# The backup must hold both; the list route reads the read model.
eventually 30 "recipe-1 SIGNING in the read model" http_field_is GET "/api/v1/executions/$wallet" "" \
  'r.result.filter((x) => x.executionId === "recipe-1").map((x) => x.status).join()' SIGNING

# ---------------------------------------------------------------------------------------------
step "an on-chain deposit: an address from the public key, a transfer on anvil, the watcher"
expect_http 201 POST "/api/v1/executions/$wallet" "$ops_token" \
  '{"executionId":"recipe-3","intent":'"$intent"',"ttlSeconds":3600,"deposit":{"chain":"evm:31337","asset":"native","minAmount":"1000"}}'
deposit_address="$(json_of "$(response)" 'r.result.depositTarget.address')"
[[ "$deposit_address" =~ ^0x[0-9a-fA-F]{40}$ ]] || fail "prepare with a deposit gave no depositTarget.address: $(response)"
service_cli deposit -- --to "$deposit_address" --amount 1000 >"$logs/deposit.log" || fail "npm run deposit failed: $(cat "$logs/deposit.log")"
note "sent 1000 wei to $deposit_address: $(cat "$logs/deposit.log")"
eventually 60 "recipe-3 OPERATION_PENDING" http_field_is GET "/api/v1/executions/$wallet/recipe-3" "" 'r.result.status' OPERATION_PENDING

# ---------------------------------------------------------------------------------------------
step "back up the read model while the service runs (backup.md: pg_dump)"
DATABASE_URL="$(sed -n 's/^DATABASE_URL=//p' "$envfile")" # the host's settings
dump="$tmp/backup/read-model-$(date +%F).dump"
pg_dump --format=custom --file "$dump" "$DATABASE_URL" 2>"$logs/pg_dump.log" || fail "pg_dump failed: $(cat "$logs/pg_dump.log")"
[ -s "$dump" ] || fail "pg_dump wrote nothing to $dump"
expect_http 200 GET /readyz # the service ran through it

# ---------------------------------------------------------------------------------------------
step "restore into a fresh database (backup.md \"Restore\" steps 1-3)"
stop_process api 20 0 # step 1: every API and worker that uses the read model (Shutdown: API first)
stop_process worker 20 0
# Step 2, with the page's --maintenance-db: a bare createdb would go to libpq's defaults.
createdb --maintenance-db "$DATABASE_URL" intent_restored 2>"$logs/createdb.log" || fail "createdb failed: $(cat "$logs/createdb.log")"
restored_url="$(pg_url intent_restored)"
pg_restore --no-owner --dbname "$restored_url" "$dump" 2>"$logs/pg_restore.log" || fail "pg_restore failed: $(cat "$logs/pg_restore.log")"
# What the backup itself holds, before repair could write anything back from Temporal.
expect_sql "$restored_url" "select status from executions where workflow_id = 'exec:$wallet:recipe-1'" SIGNING
expect_sql "$restored_url" "select count(*) || ' ' || min(state) from refunds where workflow_id = 'exec:$wallet:recipe-2'" "1 held"
sed -i "s|^DATABASE_URL=.*|DATABASE_URL=$restored_url|" "$envfile" # "point DATABASE_URL at it"
# The old database goes: whatever the service answers from here on comes from the backup (or, for
# the records, from Temporal through repair; the refunds ledger has no other source).
dropdb --maintenance-db "$restored_url" intent 2>"$logs/dropdb.log" || fail "dropdb intent failed: $(cat "$logs/dropdb.log")"
expect_db_status 0 "the restored database (step 3)"

# ---------------------------------------------------------------------------------------------
step "the worker, db -- repair, the API on the restored database (steps 4-5), and what they answer"
# Repair queries each execution, which only a running worker answers. The worker starts only if
# the seed derives the restored read model's deposit addresses (recipe-3's).
start_unit worker intent-worker.service "worker polling task queue intent-service"
service_cli db -- repair >"$logs/db-repair.log" 2>&1 || fail "db -- repair failed (step 4): $(cat "$logs/db-repair.log")"
note "db -- repair: $(cat "$logs/db-repair.log")"
start_unit api intent-api.service "api listening"
expect_http 200 GET /readyz
expect_http 200 GET "/api/v1/executions/$wallet/recipe-1"
expect_field 'r.result.status' SIGNING
expect_http 200 GET "/api/v1/executions/$wallet"
expect_field 'r.result.filter((x) => x.executionId === "recipe-1").map((x) => x.status).join()' SIGNING
expect_http 200 GET "/api/v1/executions/$wallet/recipe-3"
expect_field 'r.result.status + " " + r.result.depositTarget.address' "OPERATION_PENDING $deposit_address"
expect_http 200 GET "$refunds_query" "$refunds_token"
expect_field 'r.result.length + " " + r.result[0].state + " " + r.result[0].txHash + " " + r.result[0].amount' "1 held 0xlate 7"
expect_http 200 GET "/api/v1/refunds?state=held&wallet=$wallet" "$refunds_token"
expect_field 'r.result.length' 1
expect_db_status 0 "the restored database, with the service on it"

# ---------------------------------------------------------------------------------------------
step "shutdown in production.md's order: API, worker, storage nodes; then the chain, Temporal, PostgreSQL"
stop_process api 20 0
stop_process worker 20 0
for n in 3 2 1; do stop_process "node-$n" 20 0; done
stop_process anvil 15 any
stop_process temporal 15 any
stop_postgres

summary
