import type Router from '@koa/router';
import { badRequest, conflict, notFound } from '../../domain/errors';
import { fromReadModel } from '../http/read-model';
import type { RefundLedger, RefundState, Settlement } from '../../db/refund-ledger';
import { authenticate, requireScope } from '../http/auth';
import { readJsonBody } from '../http/body';
import type { RateLimits } from '../http/rate-limit';
import { validator } from '../http/validate';
import type { AppDeps } from '../deps';
import { decodeLedgerPageToken, encodeLedgerPageToken } from '../../db/page-token';
import {
  REFUND_PAGE_SIZE,
  approveBodySchema,
  refundIdParamSchema,
  refundListQuerySchema,
  refundedBodySchema,
  waivedBodySchema,
} from './contract';

const validId = validator<string>(refundIdParamSchema, 'id path parameter', '');
const validListQuery = validator<{
  state?: RefundState;
  wallet?: string;
  executionId?: string;
  chain?: string;
  pageSize?: string;
  pageToken?: string;
}>(refundListQuerySchema, 'query string', '');
const validRefunded = validator<{ txHash: string }>(refundedBodySchema, 'request body');
const validWaived = validator<{ reason: string }>(waivedBodySchema, 'request body');
const validApprove = validator<Record<string, never>>(approveBodySchema, 'request body');

const readModel = <R>(fn: () => Promise<R>) => fromReadModel('the refunds ledger', fn);

/**
 * The refunds ledger for operators (docs/api-refunds.md "Refunds"): list with `refunds:read`, settle each
 * row once with `refunds:write`, approve a row above the chain's limit with `refunds:approve`.
 * Every route needs a token (counted per token id).
 */
export function refundRoutes(router: Router, deps: AppDeps, limits: RateLimits): void {
  const ledger: RefundLedger = deps.refunds;

  router.get('/api/v1/refunds', limits.authFailures, async (ctx) => {
    const principal = authenticate(ctx, deps.tokens);
    await limits.token(principal.id);
    requireScope(principal, 'refunds:read');
    const q = validListQuery(ctx.query);
    const pageSize = q.pageSize === undefined ? REFUND_PAGE_SIZE.default : Number(q.pageSize);
    if (pageSize < REFUND_PAGE_SIZE.min || pageSize > REFUND_PAGE_SIZE.max)
      throw badRequest(`pageSize must be between ${REFUND_PAGE_SIZE.min} and ${REFUND_PAGE_SIZE.max}`);
    const after = q.pageToken === undefined ? undefined : decodeLedgerPageToken(q.pageToken);
    if (q.pageToken !== undefined && !after) throw badRequest('pageToken is not a token this API issued');
    const page = await readModel(() =>
      ledger.list({ state: q.state, wallet: q.wallet, executionId: q.executionId, chain: q.chain, pageSize, after }),
    );
    ctx.body = page.next ? { result: page.rows, nextPageToken: encodeLedgerPageToken(page.next) } : { result: page.rows };
  });

  const settle = (path: string, parse: (body: unknown) => Settlement) =>
    router.post(`/api/v1/refunds/:id/${path}`, limits.authFailures, async (ctx) => {
      const principal = authenticate(ctx, deps.tokens);
      await limits.token(principal.id);
      requireScope(principal, 'refunds:write');
      const id = validId(ctx.params.id);
      const settlement = parse(await readJsonBody(ctx, deps.config.bodyLimitBytes));
      const result = await readModel(() => ledger.settle(id, settlement, principal.id));
      if (result.outcome === 'missing') throw notFound(`refund ${id} not found`);
      if (result.outcome === 'conflict') throw conflict(`refund ${id} is already ${result.row.state} otherwise`, 'REFUND_SETTLED');
      if (result.outcome === 'paying')
        throw conflict(
          `refund ${id} is being paid by the service: its transaction is out, so nothing is recorded by hand until its nonce is mined`,
          'REFUND_PAYING',
        );
      if (result.outcome === 'nonce-taken')
        throw conflict(
          `refund ${id}: a transaction the service did not sign took its refund nonce ${result.row.refundNonce}; record the transaction that paid it back (refunded, with its txHash), it is not waived`,
          'REFUND_NONCE_TAKEN',
        );
      if (result.outcome === 'tx-used')
        throw conflict(
          `refund ${id}: transaction ${(settlement as { txHash: string }).txHash.toLowerCase()} already pays back refund ${result.otherId}, of another deposit address; one refund transaction pays back one deposit address`,
          'REFUND_TX_USED',
        );
      ctx.state.outcome = result.outcome;
      ctx.body = { result: result.row };
    });
  settle('refunded', (body) => ({ state: 'refunded', txHash: validRefunded(body).txHash }));
  settle('waived', (body) => ({ state: 'waived', reason: validWaived(body).reason }));

  // A person's approval of a refund above the chain's limit: the service then pays it.
  router.post('/api/v1/refunds/:id/approve', limits.authFailures, async (ctx) => {
    const principal = authenticate(ctx, deps.tokens);
    await limits.token(principal.id);
    requireScope(principal, 'refunds:approve');
    const id = validId(ctx.params.id);
    validApprove(await readJsonBody(ctx, deps.config.bodyLimitBytes));
    const result = await readModel(() => ledger.approve(id, principal.id));
    if (result.outcome === 'missing') throw notFound(`refund ${id} not found`);
    if (result.outcome === 'conflict')
      throw conflict(
        `refund ${id} is ${result.row.state}${result.row.holdReason ? ` (${result.row.holdReason})` : ''}: only a row held above-limit is approved`,
        'REFUND_NOT_ABOVE_LIMIT',
      );
    ctx.state.outcome = result.outcome;
    ctx.body = { result: result.row };
  });
}
