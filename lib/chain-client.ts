import { createPublicClient, http, type PublicClient } from 'viem';

/** A viem client for one JSON-RPC URL: calls of one tick go out as one batch request, each request bounded. */
export function chainClient(rpcUrl: string): PublicClient {
  return createPublicClient({ transport: http(rpcUrl, { batch: { batchSize: 100 }, timeout: 10_000, retryCount: 1 }) });
}
