#!/usr/bin/env bash
# Re-creates docs/temporal-ui.png: the Temporal web UI showing one execution's workflow with its
# search attributes (ExecutionWallet, ExecutionState).
#
#   bash scripts/screenshot-ui.sh [output.png]
#
# Uses the stack on the default ports if one answers (API :3000, UI :8233), else runs `npm start`
# for the duration and stops it afterwards. Prepares an execution, deposits and submits it so it
# reaches SIGNING, then has headless Chromium screenshot the workflow's "Search Attributes" tab
# once the page shows them (dist/scripts/chromium-screenshot.js: `--screenshot` alone shoots before
# the UI has loaded anything, and `--virtual-time-budget` never ends on a running workflow's page).
# Installs nothing: it needs /usr/bin/chromium (Debian: apt-get install -y chromium) and a build
# (npm run build; npm start does it). Env: SCREENSHOT_API (default http://127.0.0.1:3000), SCREENSHOT_UI (default
# http://127.0.0.1:8233), TEMPORAL_ADDRESS (default 127.0.0.1:7233), SCREENSHOT_WAIT_MS (default 30000).
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-docs/temporal-ui.png}"
api="${SCREENSHOT_API:-http://127.0.0.1:3000}"
ui="${SCREENSHOT_UI:-http://127.0.0.1:8233}"
temporal_address="${TEMPORAL_ADDRESS:-127.0.0.1:7233}"
wait_ms="${SCREENSHOT_WAIT_MS:-30000}"
chromium=/usr/bin/chromium
log() { printf '[screenshot] %s\n' "$*" >&2; }

if [ ! -x "$chromium" ]; then
  log "$chromium not found; install it first: apt-get install -y chromium"
  exit 1
fi

[ -f dist/scripts/chromium-screenshot.js ] || npm run --silent build

started_pid=""
token_id=""
cleanup() {
  # The token only served this run; revoke it so it cannot be used later.
  if [ -n "$token_id" ]; then npm run --silent token -- revoke --id "$token_id" >/dev/null 2>&1 || true; fi
  if [ -n "$started_pid" ]; then
    log "stopping the stack we started"
    kill -TERM "$started_pid" 2>/dev/null || true
    wait "$started_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

if curl -fsS "$api/healthz" >/dev/null 2>&1 && curl -fsS "$ui" >/dev/null 2>&1; then
  log "using the stack already running at $api (UI $ui)"
else
  log "starting the stack with npm start (logs: data/screenshot-start.log)"
  mkdir -p data
  npm start >data/screenshot-start.log 2>&1 &
  started_pid=$!
  for _ in $(seq 1 600); do
    grep -q 'intent-service is up' data/screenshot-start.log 2>/dev/null && break
    if ! kill -0 "$started_pid" 2>/dev/null; then log "npm start failed:"; tail -20 data/screenshot-start.log >&2; exit 1; fi
    sleep 0.5
  done
  grep -q 'intent-service is up' data/screenshot-start.log || { log "the stack did not come up"; exit 1; }
fi

json() { node -pe "JSON.parse(process.argv[1])$2" "$1"; }

token_id="screenshot-$(date +%s)"
token=$(npm run --silent token -- create --id "$token_id" --scope executions:prepare --scope executions:deposit)
keys=$(npm run --silent sign -- keygen)
wallet=$(json "$keys" .publicKeyBase58)
secret=$(json "$keys" .secretKey)
execution_id="demo-$(date +%s)"
intent='{"swap":"USDC->ETH","amount":"10"}'

post() { curl -fsS -X POST "$api$1" -H 'content-type: application/json' ${2:+-H "authorization: Bearer $2"} -d "$3"; }
post "/api/v1/executions/$wallet" "$token" "{\"executionId\":\"$execution_id\",\"intent\":$intent,\"ttlSeconds\":3600}" >/dev/null
post "/api/v1/executions/$wallet/$execution_id/deposit" "$token" '{"txHash":"0xfeed","chain":"solana","amount":"10"}' >/dev/null
body=$(npm run --silent sign -- --secret-key "$secret" --wallet "$wallet" --execution-id "$execution_id" --domain localhost --intent "$intent")
status=$(post "/api/v1/executions/$wallet/submit" "" "$body")
log "submit answered $status"
[ "$(json "$status" .result.status)" = SIGNING ] || { log "the execution did not reach SIGNING"; exit 1; }

workflow_id="exec:$wallet:$execution_id"
temporal=$(bash scripts/temporal-cli.sh)
described=$("$temporal" workflow describe --address "$temporal_address" --namespace default --workflow-id "$workflow_id" -o json)
run_id=$(json "$described" .workflowExecutionInfo.execution.runId)
encode() { node -pe 'encodeURIComponent(process.argv[1])' "$1"; }
url="$ui/namespaces/default/workflows/$(encode "$workflow_id")/$run_id/search-attributes"
log "screenshot of $url"
rm -f "$out"
node dist/scripts/chromium-screenshot.js --chromium "$chromium" --url "$url" --out "$out" --timeout-ms "$wait_ms" \
  --wait-for ExecutionWallet --wait-for ExecutionState --wait-for SIGNING --width 1600 --height 1000
[ -s "$out" ] || { log "no screenshot was written"; exit 1; }
log "wrote $out (workflow $workflow_id)"
