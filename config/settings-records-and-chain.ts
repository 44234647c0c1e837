import { parseConfirmations } from './confirmations';
import { parseDepositTokens } from './deposit-tokens';
import type { SettingsTable } from './setting-row';
import { chainExplorers, chainRpcUrl, inProject, inProjectIfSet, refundLimits, refundMinimums } from './setting-converters';

/** The service's settings, second part: the read model, on-chain deposits, refunds and webhooks. */
export const RECORDS_AND_CHAIN_SETTINGS = {
  DATABASE_URL: {
    kind: 'string',
    file: 'database.url',
    defaultText: 'unset: SQLite',
    config: 'database.url',
    readBy: 'api, worker, scripts',
    description: 'PostgreSQL of the read model, `postgres://user:pass@host:5432/db`',
  },
  DATABASE_FILE: {
    kind: 'string',
    default: 'data/read-model.sqlite',
    file: 'database.sqliteFile',
    config: 'database.sqliteFile',
    toConfig: inProject,
    readBy: 'api, worker, scripts',
    description: 'the SQLite read model (WAL; the API and worker of one machine share it)',
  },
  CHAIN_RPC_URL: {
    kind: 'string',
    defaultText: 'unset: `npm start` runs a local anvil chain on 127.0.0.1:8545; a lone worker or API has no on-chain deposits',
    config: 'chain.rpcUrl',
    toConfig: chainRpcUrl,
    readBy: 'api, worker, scripts',
    description:
      "JSON-RPC URL of the EVM chain whose native transfers complete deposits; the worker runs its watcher (`chain-watcher:evm:<chainId>`), the API accepts prepare's `deposit` for that chain",
  },
  DEPOSIT_CONFIRMATIONS: {
    kind: 'string',
    defaultText:
      'per chain: `evm:1` 64, `evm:11155111` and `evm:17000` 12, `evm:31337` and `evm:1337` 2; any other chain: none (its watcher does not start)',
    config: 'chain.confirmations',
    toConfig: parseConfirmations,
    readBy: 'api, worker',
    description:
      "blocks a deposit's block needs, counting itself, before the watcher signals `depositCompleted`: one number (1–1000) for the chain of CHAIN_RPC_URL, or `evm:<chainId>=N` pairs, comma-separated; a chain neither names takes the default column (read every round: a change applies without restarting the watcher); the API refuses a prepare's `deposit` on a chain without a number and proves reported deposits at the same depth, so set it on APIs and workers alike",
  },
  DEPOSIT_TOKENS: {
    kind: 'string',
    defaultText: 'unset: native deposits only (`npm start` and `npm run cluster` allow the tUSD they deploy)',
    config: 'chain.tokens',
    toConfig: parseDepositTokens,
    readBy: 'api, worker',
    description:
      'ERC-20 tokens prepare accepts as `deposit.asset` `erc20:<address>` and the watcher reads `Transfer` logs of: `evm:<chainId>:<address>=<SYMBOL>:<decimals>`, comma-separated; a token that does not emit the standard `Transfer` event for every balance change must not be listed',
  },
  CHAIN_EXPLORERS: {
    kind: 'string',
    defaultText:
      '`evm:1` https://etherscan.io, `evm:11155111` https://sepolia.etherscan.io, `evm:17000` https://holesky.etherscan.io; any other chain (the dev chains included): none',
    config: 'explorers',
    toConfig: chainExplorers,
    readBy: 'api',
    description:
      'the block explorer the status pages link transactions, addresses and blocks to, per chain: `evm:<chainId>=<https URL>` pairs, comma-separated (`<URL>/tx/<hash>`, `<URL>/address/<address>`, `<URL>/block/<number>`); `evm:<chainId>=none` links nothing on that chain',
  },
  CHAIN_POLL_INTERVAL_MS: {
    kind: 'integer',
    min: 50,
    default: 1000,
    config: 'chain.pollIntervalMs',
    readBy: 'worker',
    description:
      'how long a caught-up chain watcher waits for the next block in one round: its activity asks the node for the head every 100 ms (beyond 5 s, the workflow sleeps the rest on a timer)',
  },
  CHAIN_MAX_BLOCKS_PER_ROUND: {
    kind: 'integer',
    min: 1,
    max: 1000,
    default: 100,
    config: 'chain.maxBlocksPerRound',
    readBy: 'worker',
    description: 'most blocks one round of the chain watcher reads (one activity)',
  },
  CHAIN_REORG_WINDOW: {
    kind: 'integer',
    min: 2,
    max: 10000,
    default: 128,
    config: 'chain.windowSize',
    readBy: 'api, worker',
    description:
      'recent blocks the watcher keeps to detect a reorg (more than DEPOSIT_CONFIRMATIONS); a signalled deposit is checked for a deep reorg while its block is within it',
  },
  CHAIN_ROUNDS_PER_RUN: {
    kind: 'integer',
    min: 10,
    max: 100000,
    default: 500,
    config: 'chain.roundsPerRun',
    readBy: 'worker',
    description:
      'rounds of the chain watcher per workflow run before it continues as new with its state (bounds its history; it also does when Temporal suggests it)',
  },
  DEPOSIT_SEED_FILE: {
    kind: 'string',
    default: 'data/deposit-seed',
    config: 'depositSeedFile',
    toConfig: inProject,
    readBy: 'worker, scripts',
    description:
      'the 32-byte secret every deposit address\'s private key is derived from (the BIP32 master seed; addresses issued before public derivation by HMAC): `npm run seed -- create` makes it once (`npm start` the first time), mode 0600 (a file group or others may read is refused); the workers read it to sign refunds and refuse to start without it, `npm run seed` exports its public key and backs it up; the API never reads it. Losing it loses the keys of the deposit addresses (docs/backup.md "The deposit seed: custody, backup and restore")',
  },
  DEPOSIT_XPUB_FILE: {
    kind: 'string',
    default: 'data/deposit-xpub',
    config: 'depositXpubFile',
    toConfig: inProject,
    readBy: 'api, scripts',
    description:
      "the extended public key (`xpub…`) the API derives new deposit addresses from, written by `npm run seed -- xpub --out FILE` on a host that holds the seed (`npm start` writes it the first time): public, but it must be the seed's, or refunds cannot be signed; the API refuses to start without it when CHAIN_RPC_URL is set",
  },
  REFUND_PAYMENTS: {
    kind: 'enum',
    values: ['on', 'off'],
    default: 'on',
    config: 'refunds.payments',
    readBy: 'api, worker',
    description:
      'whether the workers pay refunds ledger rows back on the chain by themselves (`refund:<chain>:<address>` workflows); `off`: no new refund is signed, one already signed is still watched until its nonce is mined',
  },
  REFUND_LIMITS: {
    kind: 'string',
    defaultText:
      '`evm:31337` and `evm:1337`: 1 ETH and 1,000 tUSD (`evm:31337:tUSD=1000000000`); any other asset: none (every row is held `above-limit`)',
    config: 'refunds.limits',
    toConfig: refundLimits,
    readBy: 'worker',
    description:
      'the most a refunds ledger row is paid back without a person, in base units, per asset: `evm:<chainId>=<wei>` for the native coin, `evm:<chainId>:<token address or DEPOSIT_TOKENS symbol>=<amount>` for a token, comma-separated; a row above it is held `above-limit` until approved',
  },
  REFUND_MINIMUMS: {
    kind: 'string',
    defaultText: '`evm:31337` and `evm:1337`: 0.01 tUSD (`evm:31337:tUSD=10000`); any other asset: none',
    config: 'refunds.minimums',
    toConfig: refundMinimums,
    readBy: 'api, worker',
    description:
      'the least a refunds ledger row is paid back by the service, in base units, per asset (written like REFUND_LIMITS); a row below it is held `too-small` as it is written, with no refund workflow and no webhook. A token that REFUND_LIMITS lets the service pay back must have one (the worker and the API refuse to start without it): its refund costs the gas account a top-up and a fee whatever the amount',
  },
  REFUND_GAS_KEY_FILE: {
    kind: 'string',
    defaultText: "unset (`npm start` on its own anvil: anvil's second dev account, written to `data/gas-account.key`)",
    config: 'refunds.gasKeyFile',
    toConfig: inProjectIfSet,
    readBy: 'worker',
    description:
      "the gas account's private key (a file holding `0x` + 64 hex digits, mode 0600): it pays the fee of every token refund by topping the deposit address up first; a worker without one holds token rows `no-gas-key`. A secret like the deposit seed: back it up",
  },
  SIGNER_URL: {
    kind: 'string',
    defaultText: 'unset: the worker signs with its own key files',
    config: 'signer.url',
    readBy: 'worker',
    description:
      'the signer service the worker asks for every signature (refunds, cancels, gas top-ups) instead of holding keys: `http://127.0.0.1:PORT` of `npm run signer` on the same host; set, the worker reads no DEPOSIT_SEED_FILE nor REFUND_GAS_KEY_FILE',
  },
  SIGNER_TOKEN_FILE: {
    kind: 'string',
    default: 'data/signer-token',
    config: 'signer.tokenFile',
    toConfig: inProject,
    readBy: 'worker, scripts',
    description:
      'the secret the worker proves itself to the signer service with (one line, mode 0600; `npm run signer` makes it when missing): the signer signs for nobody else',
  },
  SIGNER_PORT: {
    kind: 'integer',
    min: 0,
    max: 65535,
    default: 9480,
    config: 'signer.port',
    readBy: 'scripts',
    description: '`npm run signer`: its port on 127.0.0.1 (0: any free one, printed on its ready line)',
  },
  REFUND_MIN_FEE_MULTIPLE: {
    kind: 'integer',
    min: 1,
    max: 1000,
    default: 10,
    config: 'refunds.minFeeMultiple',
    readBy: 'worker',
    description: "a row below this many times its refund's most cost (gas × fee cap) is held `too-small`",
  },
  REFUND_OPEN_RUNS: {
    kind: 'integer',
    min: 1,
    max: 10000,
    default: 100,
    config: 'refunds.openRuns',
    readBy: 'worker',
    description:
      "refund workflows (one per deposit address with a row to pay) the sweep keeps running at once; other addresses wait their turn. The worker's cache for refunds holds twice as many, so that no refund run waits for a cache slot (decision 0089)",
  },
  REFUND_REPLACE_AFTER_BLOCKS: {
    kind: 'integer',
    min: 1,
    max: 10000,
    default: 10,
    config: 'refunds.replaceAfterBlocks',
    readBy: 'worker',
    description:
      'blocks a refund transaction may wait unmined before it is replaced at the same nonce with fees raised by 12.5 % (up to half the row amount, then the row is held `fee-cap`)',
  },
  REFUND_SWEEP_ADDRESSES: {
    kind: 'integer',
    min: 1,
    max: 10000,
    default: 100,
    config: 'refunds.sweepAddresses',
    readBy: 'worker',
    description:
      'deposit addresses one refund sweep (every 5 s) hands to refund workflows, at most: those it handed out longest ago first, so that addresses whose refunds wait (not deep enough yet, a node that fails) never keep a newer one waiting',
  },
  WEBHOOK_URLS: {
    kind: 'list',
    default: [],
    file: 'webhooks[].url',
    readBy: 'api, worker',
    description:
      'endpoints that receive every execution status change: the API records at prepare whether an execution sends webhooks at all, the workers deliver them, so set it (and WEBHOOK_SECRETS) on both',
  },
  WEBHOOK_SECRETS: {
    kind: 'list',
    default: [],
    file: 'webhooks[].secret',
    readBy: 'api, worker',
    description: '`whsec_…` secrets, one per WEBHOOK_URLS entry, same order',
  },
} as const satisfies SettingsTable;
