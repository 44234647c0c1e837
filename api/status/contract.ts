/**
 * The status pages' OpenAPI operations: HTML for people, so each answer is `text/markup` (errors
 * too), and the two assets the pages load.
 */
import { depositChainParamSchema, depositTxHashParamSchema } from '../deposits/contract';
import { param, rateLimitHeaders, requestIdHeader, retryAfter, type Json } from '../http/openapi-parts';
import { ASSETS } from '../http/pages';

const page = (description: string, headers: Json = {}) => ({
  description,
  headers: {
    ...requestIdHeader,
    'Content-Security-Policy': { description: "the page loads only this origin's script and stylesheet", schema: { type: 'string' } },
    ...headers,
  },
  content: { 'text/html': { schema: { type: 'string' } } },
});

const pageErrors = {
  429: page('over the rate limit of this client address; retry after Retry-After seconds', { ...retryAfter, ...rateLimitHeaders }),
  503: page('the outcome is unknown (Temporal or the read model busy or unreachable); retry after Retry-After seconds', retryAfter),
  500: page('a fault of the service itself; no details'),
};

const asset = (operationId: string, summary: string, type: string) => ({
  get: {
    operationId,
    summary,
    tags: ['status pages'],
    security: [],
    parameters: [param('requestId')],
    responses: { 200: { description: summary, headers: requestIdHeader, content: { [type]: { schema: { type: 'string' } } } } },
  },
});

export function statusPaths(): Json {
  return {
    '/status/{wallet}/{executionId}': {
      get: {
        operationId: 'executionStatusPage',
        summary: "An execution's status page, for its depositor (HTML)",
        tags: ['status pages'],
        security: [],
        description:
          "Rendered on the server: the status and its reason in words, the deposit target (address with a QR code, asset, minimum, deadline), the timeline and the refunds. Its script then follows the execution's event stream (or, without a stream slot, asks for the page again) and updates it in place. Public and limited per client like the GET of a record.",
        parameters: [param('wallet'), param('executionId'), param('requestId')],
        responses: {
          200: page('the page'),
          400: page('a wallet or execution id that cannot exist, shown as text'),
          404: page('no such execution for this wallet'),
          ...pageErrors,
        },
      },
    },
    '/status/tx/{chain}/{txHash}': {
      get: {
        operationId: 'transactionStatusPage',
        summary: 'What became of a deposit transaction, for the depositor who knows only its hash (HTML)',
        tags: ['status pages'],
        security: [],
        description:
          'Each transfer of the transaction the service knows of (taken by an execution, or owed back with its refund), or, while none is known, where the chain watcher stands: not reached yet or short of its confirmations (seen up to block X; the transaction is in block Y), or read and paying no deposit address of the service.',
        parameters: [
          { name: 'chain', in: 'path', required: true, description: '`evm:<chainId>`', schema: depositChainParamSchema },
          { name: 'txHash', in: 'path', required: true, description: '`0x` + 64 hex digits, any case', schema: depositTxHashParamSchema },
          param('requestId'),
        ],
        responses: {
          200: page('the transfers of the transaction the service knows of'),
          400: page('a chain or transaction hash that cannot exist, shown as text'),
          404: page('no transfer of it known (yet): the page says whether the watcher has reached it; it asks again by itself'),
          ...pageErrors,
        },
      },
    },
    [`${ASSETS}/status.js`]: asset('statusPageScript', "the status pages' script", 'text/javascript'),
    [`${ASSETS}/status.css`]: asset('statusPageStylesheet', "the status pages' stylesheet", 'text/css'),
  };
}
