import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { badRequest } from '../../domain/errors';
import { parseEoa } from '../../domain/eoa';
import type { WhitelistChange } from '../../domain/whitelist-messages';
import { whitelistBatchWorkflowId } from '../../contracts/temporal';
import { authenticate } from '../http/auth';
import { readJsonBody } from '../http/body';
import { whitelistBodySchema } from './contract';
import type { RateLimits } from '../http/rate-limit';
import { validator } from '../http/validate';
import type { WhitelistService } from './service';
import type { AppDeps } from '../deps';

const TIMEOUT_HEADER = /^[1-9][0-9]{0,15}$/;

/** A failed batch's errorMessage: the node and its fault go to the log, not to the client. */
export const BATCH_FAILED_MESSAGE = 'a storage node refused the update or answered unreadably; the batch is being reverted';

/**
 * The deadline of a batch: the `Timeout` header (ms, capped) or RequestConfig.TimeoutMs when there is
 * no header. A header that is present but empty is not a positive integer either: 400.
 */
export function batchDeadlineMs(header: string | string[] | undefined, request: { timeoutMs: number; maxTimeoutMs: number }): number {
  if (header === undefined) return request.timeoutMs;
  const value = (Array.isArray(header) ? header.join(', ') : header).trim();
  if (!TIMEOUT_HEADER.test(value)) throw badRequest('Timeout header must be a positive integer of milliseconds');
  return Math.min(Number(value), request.maxTimeoutMs);
}

/** `POST /chain/whitelists/`: checks in the documented order (401, 400, 403; docs/api-whitelists.md "Changing entries"), then the batch workflow. */
export function whitelistRoutes(router: Router, deps: AppDeps, whitelists: WhitelistService, limits: RateLimits): void {
  const { request } = deps.config;
  const validBody = validator<WhitelistChange[]>(whitelistBodySchema(Number.MAX_SAFE_INTEGER), 'request body');

  const handler = async (ctx: Context, _next: Next) => {
    ctx.state.errorStyle = 'whitelist';
    const principal = authenticate(ctx, deps.tokens);
    await limits.token(principal.id);
    const body = await readJsonBody(ctx, deps.config.bodyLimitBytes);
    if (Array.isArray(body) && body.length > request.maxBatchLen) {
      throw badRequest(`the batch has ${body.length} changes; RequestConfig.MaxBatchLen is ${request.maxBatchLen}`);
    }
    const changes = validBody(body).map((change, index) => {
      const eoa = parseEoa(change.entry);
      if (!eoa.ok) throw badRequest(`change ${index}: entry ${eoa.reason}`);
      return { op_type: change.op_type, kind: change.kind, entry: eoa.address };
    });
    // The raw header, not ctx.get(), which answers '' both for no header and for an empty one.
    const deadlineMs = batchDeadlineMs(ctx.req.headers.timeout, request);
    whitelists.authorise(principal, changes);

    const answer = await whitelists.run(principal, changes, deadlineMs);
    ctx.state.workflowId = whitelistBatchWorkflowId(answer.batchId);
    ctx.state.batchId = answer.batchId;
    ctx.state.outcome = answer.status;
    ctx.set('X-Batch-Id', answer.batchId);
    ctx.status = answer.status;
    switch (answer.status) {
      case 200:
        ctx.body = answer.confirmations;
        break;
      case 408:
        ctx.body = {
          error: 'Request Timeout',
          errorMessage: answer.errorMessage ?? 'not every storage node answered in time',
          result: answer.confirmations,
        };
        break;
      case 403:
        ctx.body = { error: 'Forbidden', errorMessage: answer.errorMessage ?? 'not authorised; nothing was applied' };
        break;
      case 500:
        deps.logger.error({ reqId: ctx.state.requestId, batchId: answer.batchId, detail: answer.errorMessage }, 'whitelist batch failed');
        ctx.body = { error: 'Internal Server Error', errorMessage: BATCH_FAILED_MESSAGE };
    }
  };

  router.post('/chain/whitelists/', limits.authFailures, handler);
  router.post('/chain/whitelists', limits.authFailures, handler);
}
