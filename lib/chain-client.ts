import { createPublicClient, http, type PublicClient, type Transport } from 'viem';
import { redactError, redactor } from './redact';

/**
 * A viem client for one JSON-RPC URL: calls of one tick go out as one batch request, each request
 * bounded. `retryCount`: how often a failed request (a timeout too) is sent again at once.
 *
 * Its errors name the node by its origin only: viem writes the whole URL into its messages, and a
 * hosted node's URL holds the provider's key (`/v3/<key>`). They are rewritten where they leave
 * the transport, so that no caller (a log line, an activity's failure, a span) ever holds the key.
 */
export function chainClient(rpcUrl: string, options: { retryCount?: number } = {}): PublicClient {
  const transport = http(rpcUrl, { batch: { batchSize: 100 }, timeout: 10_000, retryCount: options.retryCount ?? 1 });
  const redact = redactor({ urls: [rpcUrl] });
  const redacting: Transport = (params) => {
    const inner = transport(params);
    const request: typeof inner.request = async (args, requestOptions) => {
      try {
        return await inner.request(args, requestOptions);
      } catch (err) {
        throw redactError(err, redact);
      }
    };
    return { ...inner, request };
  };
  return createPublicClient({ transport: redacting });
}
