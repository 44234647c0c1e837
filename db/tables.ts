import type { Generated } from 'kysely';

/**
 * The read model's tables, as Kysely sees them. One row per execution: the newest record the
 * workflow has projected (db/execution-store.ts). Times are ISO-8601 UTC text, which sorts in time
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
}

export interface ReadModelTables {
  executions: ExecutionsTable;
  deposit_addresses: DepositAddressesTable;
}

export type { Generated };
