import type { HDKey } from '@scure/bip32';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { NodeTransport } from '../activities/node-transport';
import type { ApiConfig } from '../config/config';
import type { ExecutionStore } from '../db/execution-store';
import type { RefundLedger } from '../db/refund-ledger';
import type { DepositAddressStore } from '../db/deposit-addresses';
import type { OwnerRefundAddresses } from '../db/owner-refund-address';
import type { DepositProof } from '../domain/deposit-proof';
import type { PayerKind } from '../domain/payer-kind';
import type { Deposit, DepositTarget } from '../domain/execution-state';
import type { TokenStore } from '../tokens/token-store';
import type { LimiterStore } from './http/rate-limit';

/** What the Koa app is built from (api/app.ts); routes take it too, so it lives apart from the app. */
export interface AppDeps {
  config: ApiConfig;
  client: Client;
  tokens: TokenStore;
  logger: Logger;
  /** Storage node base URLs the whitelist batches fan out to. */
  storageNodes: readonly string[];
  /** Signs every request to a storage node (reads and probes). */
  nodeTransport: NodeTransport;
  /** The read model: the list route, and records after Temporal's retention. */
  executionStore: ExecutionStore;
  /** The refunds ledger: deposits reported to an execution that had closed. */
  refunds: RefundLedger;
  /** On-chain deposits (CHAIN_RPC_URL set): absent, prepare refuses a `deposit`. */
  deposits?: DepositDeps;
  /** Where the rate limits count: a PostgreSQL pool shared by every API, or (absent) each process's memory. */
  limiterStore?: LimiterStore;
}

/** What prepare and the deposit route need for on-chain deposits: the watched chain, the seed, the address table, the chain's word on a report. */
export interface DepositDeps {
  /** Whether the chain shows the reported deposit (domain/deposit-proof.ts); rejects while the node cannot be reached. */
  prove(target: DepositTarget, reported: Deposit): Promise<DepositProof>;
  /** Whether a proof's sender (the transfer's payer) is an EOA or a contract, by its code (domain/payer-kind.ts). */
  payerKind(address: string): Promise<PayerKind>;
  /** `evm:<chainId>` of CHAIN_RPC_URL, asked of the node once; rejects while it cannot be reached. */
  chain(): Promise<string>;
  /** The deposit account's extended public key (DEPOSIT_XPUB_FILE): new addresses derive from it. */
  xpub: HDKey;
  store: DepositAddressStore;
  /** The refund addresses owners set by a signed command (decision 0098). */
  owners: OwnerRefundAddresses;
  /**
   * Whether the chain's node offers call traces (value sent by contracts' internal calls is seen
   * only then); undefined while the node cannot be asked.
   */
  traces(): Promise<boolean | undefined>;
  /** Blocks a deposit on `chain` needs, counting its own (DEPOSIT_CONFIRMATIONS); undefined for a chain without a number. */
  confirmations(chain: string): number | undefined;
  /** The block the chain's node shows transaction `txHash` mined in; undefined while it shows none. Rejects while it cannot be asked. */
  transactionBlock(txHash: string): Promise<number | undefined>;
  /** The chain watcher's last confirmed block on `chain`, as the read model keeps it (undefined before its first); rejects while the read model is down. */
  checkpoint(chain: string): Promise<number | undefined>;
  /** Whether the watcher recorded a transfer of `txHash` (lowercase) on `chain` as signalled or owed, near its checkpoint (the read model's chain_signals). */
  signalled(chain: string, txHash: string): Promise<boolean>;
}
