import type { Generated } from 'kysely';

/**
 * The read model's tables, as Kysely sees them. One row per execution: the newest record written
 * for it (db/execution-store.ts; `projected_at` is when). Times are ISO-8601 UTC text, which sorts in time
 * order on both engines.
 */
export interface ExecutionsTable {
  workflow_id: string;
  wallet: string;
  execution_id: string;
  status: string;
  /** recordVersion(record): a write only replaces a row of a lower version. */
  version: number;
  created_at: string;
  updated_at: string;
  /** The execution record as JSON. */
  record: string;
  /** When this row was last written (ISO-8601), for operators. */
  projected_at: string;
  /** The chain of the deposit the record took (`evm:<chainId>`), or null (none, or none named). */
  deposit_chain: string | null;
  /** The txHash of the deposit the record took, lowercase, or null: the deposit lookup's index. */
  deposit_tx_hash: string | null;
}

/**
 * One row per deposit address (docs/decisions/0071-chain-watcher.md): written by the API at prepare,
 * before the execution's workflow starts, so the chain watcher can map every transfer to its execution.
 */
export interface DepositAddressesTable {
  /** `evm:<chainId>`. */
  chain: string;
  /** Lowercase `0x` + 40 hex digits. */
  address: string;
  workflow_id: string;
  /** Wei, a decimal string. */
  min_amount: string;
  created_at: string;
  /** Transfers below min_amount the chain watcher has signalled (it stops at a cap). */
  dust_signalled: Generated<number>;
  /** The asset the address takes (`native` or `erc20:<lowercase address>`): anything else is never its deposit. */
  asset: Generated<string>;
  /** Where refunds of this address go (prepare's deposit.refundAddress, lowercase), else each transfer's payer. */
  refund_address: string | null;
  /** Refund transactions (and cancels) mined from this address: the nonce its next refund must find. */
  refund_nonces_mined: Generated<number>;
  /** Where the owner's signed command sends refunds of its own deposit and of that deposit's payer's transfers (lowercase). */
  owner_refund_address: string | null;
  /** The payer (lowercase) whose transfers owner_refund_address covers. */
  owner_refund_payer: string | null;
  /** The execution's own deposit's transaction (lowercase), which owner_refund_address covers. */
  owner_refund_tx: string | null;
  /** The command's envelope timestamp (Unix seconds): a command not newer changes nothing. */
  owner_refund_at: number | string | null;
  /** The command's signature (canonical hex): the same command again is answered, not applied. */
  owner_refund_signature: string | null;
  /** When the refund sweep last handed this address to a refund workflow (ISO time); null: never. */
  refund_swept_at: string | null;
  /** How its key derives from the seed (domain/deposit-key.ts KeyDerivation): `hmac-v0` for addresses issued before public derivation. */
  key_derivation: Generated<string>;
}

/** One row per watched chain: the chain watcher's last confirmed block, kept outside its history. */
export interface ChainCheckpointsTable {
  chain: string;
  /** Every transfer at or below it was signalled or owed. */
  block_number: number | string;
  block_hash: string;
  updated_at: string;
}

/** One row per deposit the service did not take (db/refund-ledger.ts). */
export interface RefundsTable {
  /** Derived from (workflow_id, chain, tx_hash, transfer_index): the same transfer is one row. */
  id: string;
  workflow_id: string;
  wallet: string;
  execution_id: string;
  /** `evm:<chainId>`; null for an HTTP report that named no chain. */
  chain: string | null;
  tx_hash: string;
  /** The transfer's place in its transaction (0 when the report named none). */
  transfer_index: number;
  /** Base units, a decimal string, when the report or the chain gave one. */
  amount: string | null;
  asset: string | null;
  /**
   * Who paid the transfer (lowercase), where the writer read it from the chain: the token Transfer
   * log's `from`, an internal call's frame `from`, or the transaction's sender for its own value. A
   * later writer that knows it fills it in.
   */
  sender: string | null;
  /** `eoa` or `contract` (the sender has code other than an EIP-7702 delegation); null where not known. */
  payer_kind: string | null;
  /** Why it was not taken: a refusal reason of the execution record, or `closed`. */
  reason: string;
  /** Who saw the refusal: `api` (a deposit report), `chain-watcher` (a transfer) or `execution` (its read-model write). */
  reported_by: string;
  /** contracts/refunds.ts REFUND_STATES: `due`, `held`, `paying`, `refunded` (refund_tx_hash), `waived` (waived_reason), `void`. */
  state: string;
  created_at: string;
  settled_at: string | null;
  refund_tx_hash: string | null;
  waived_reason: string | null;
  /** The token id that settled it. */
  settled_by: string | null;
  /** When its refund.due webhook was handed to its delivery workflow; null until then (an outbox). */
  announced_at: string | null;
  /** Set while `void`: when a reorganisation removed the transfer, and why. */
  voided_at: string | null;
  void_reason: string | null;
  /** How many transfers the row stands for: 1, or more for a block's dust to one address (tx_hash is then the block's hash). */
  transfers: Generated<number>;
  /** Why a `held` row waits for a person (contracts/refunds.ts HOLD_REASONS), or null. */
  hold_reason: string | null;
  /** The refunder's transaction (state `paying`, then `refunded`): nonce, destination, every signed variant (JSON), and once mined its block and value. */
  refund_nonce: number | null;
  refund_to: string | null;
  refund_variants: string | null;
  refund_block: number | string | null;
  /** The head when the row's nonce was first seen used with none of its variants mined: held only at a second look, confirmations later. */
  nonce_gone_seen_block: number | string | null;
  refund_value: string | null;
  /** When its refund.paid webhook was handed to its delivery workflow; null while refunded and not yet (an outbox). */
  paid_announced_at: string | null;
  /** The hold reason whose refund.held webhook was handed to its delivery workflow; null: none yet (an outbox). */
  held_announced: string | null;
  /** Wei its refunder's transactions that paid nobody (a cancel, a status-0 refund) cost, out of its amount; null: none. */
  fees_spent: string | null;
  /** The token id that approved paying it above the chain's limit, and when; null unless approved. */
  approved_by: string | null;
  approved_at: string | null;
  /** A token refund's: wei its gas top-ups left on the deposit address once it was mined (topped up less its fee); null otherwise. */
  gas_left: string | null;
  /** State changes to announce (1: due, 2: voided, 3: due again, …) and how many were handed over: an outbox. */
  events: Generated<number>;
  announced_events: Generated<number>;
}

/** The transfers the chain watcher signalled or owed, kept near its checkpoint (db/deposit-addresses.ts). */
export interface ChainSignalsTable {
  chain: string;
  /** domain/chain-watcher transferKey. */
  transfer_key: string;
  block_number: number | string;
  /** The ChainTransfer as JSON (its block hash decides whether a reorganisation removed it). */
  transfer: string;
}

/** One row per gas account and chain (db/gas-account.ts): the transactions of it the service saw mined. */
export interface GasAccountsTable {
  chain: string;
  /** Lowercase. */
  address: string;
  /** The nonce its next top-up must find. */
  nonces_mined: number;
  created_at: string;
}

/** One top-up of a deposit address by a gas account, paying a token refund's fee (db/gas-account.ts). */
export interface GasTopupsTable {
  id: string;
  chain: string;
  /** The gas account (lowercase). */
  account: string;
  nonce: number;
  /** The refunds ledger row whose fee it pays. */
  refund_id: string;
  /** The deposit address (lowercase). */
  to_address: string;
  /** Wei. */
  value: string;
  /** Every signed variant at its nonce (JSON, contracts/refunds.ts RefundVariant), written before any is broadcast. */
  variants: string;
  /** `sending`, `mined` (one of its variants, tx_hash), `lost` (its nonce taken by a transaction it did not sign). */
  state: string;
  block: number | string | null;
  tx_hash: string | null;
  /** The head when its nonce was first seen used with none of its variants mined: `lost` only at a second look, confirmations later. */
  nonce_gone_seen_block: number | string | null;
  /** Wei the mined variant cost (gas used × effective gas price). */
  fee: string | null;
  created_at: string;
}

/**
 * A prepare's place among the open executions (db/execution-store.ts `admit`), taken before its
 * workflow starts; it counts until the execution's row is in `executions`, or for a grace period.
 */
export interface AdmissionsTable {
  workflow_id: string;
  wallet: string;
  admitted_at: string;
}

/**
 * A live worker's announcement (db/worker-capacity.ts): the open runs it takes, renewed every few
 * seconds; a row past `expires_at` no longer counts (its worker stopped or lost the read model).
 */
export interface WorkerCapacityTable {
  worker_id: string;
  /** The worker's build id; null for an unversioned worker. */
  build_id: string | null;
  open_runs: number;
  /** 1 when the worker's build is its deployment's current version (or it is unversioned): new runs go there. */
  current: number;
  expires_at: string;
}

export interface ReadModelTables {
  executions: ExecutionsTable;
  admissions: AdmissionsTable;
  worker_capacity: WorkerCapacityTable;
  deposit_addresses: DepositAddressesTable;
  refunds: RefundsTable;
  chain_checkpoints: ChainCheckpointsTable;
  chain_signals: ChainSignalsTable;
  gas_accounts: GasAccountsTable;
  gas_topups: GasTopupsTable;
}

export type { Generated };
