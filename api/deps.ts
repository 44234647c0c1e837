import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { NodeTransport } from '../activities/node-transport';
import type { Config } from '../config/config';
import type { ExecutionStore } from '../db/execution-store';
import type { TokenStore } from '../tokens/token-store';
import type { LimiterStore } from './http/rate-limit';

/** What the Koa app is built from (api/app.ts); routes take it too, so it lives apart from the app. */
export interface AppDeps {
  config: Config;
  client: Client;
  tokens: TokenStore;
  logger: Logger;
  /** Storage node base URLs the whitelist batches fan out to. */
  storageNodes: readonly string[];
  /** Signs every request to a storage node (reads and probes). */
  nodeTransport: NodeTransport;
  /** The read model: the list route, and records after Temporal's retention. */
  executionStore: ExecutionStore;
  /** Where the rate limits count: a PostgreSQL pool shared by every API, or (absent) each process's memory. */
  limiterStore?: LimiterStore;
}
