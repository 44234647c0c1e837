import { createPublicClient, http, type PublicClient } from 'viem';

/**
 * A viem client for one JSON-RPC URL: calls of one tick go out as one batch request, each request
 * bounded. `retryCount`: how often a failed request (a timeout too) is sent again at once.
 */
export function chainClient(rpcUrl: string, options: { retryCount?: number } = {}): PublicClient {
  return createPublicClient({
    transport: http(rpcUrl, { batch: { batchSize: 100 }, timeout: 10_000, retryCount: options.retryCount ?? 1 }),
  });
}
