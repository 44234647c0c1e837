import { PassThrough } from 'node:stream';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { isCurvePoint, isWeakPublicKey } from './ed25519';
import { decodeKey } from '../../domain/encoding';
import { badRequest } from '../../domain/errors';
import { EXECUTION_STATUSES, type ExecutionRecord, type ExecutionStatus } from '../../domain/execution-state';
import { executionWorkflowId } from '../../contracts/temporal';
import { isBaseUnits } from '../../domain/wei';
import { authenticate, requireScope } from '../http/auth';
import { eventsSince, isClosed, seenAll, seenBy, type ExecutionEventHub } from './events';
import type { ExecutionService, WalletBudget } from './service';
import { credentialVerified, type RateLimits } from '../http/rate-limit';
import { readJsonBody } from '../http/body';
import { refundPolicy } from './refund-policy';
import { lookupExecutions } from './lookup';
import {
  MAX_INTENT_DEPTH,
  PAGE_SIZE,
  cancelBodySchema,
  depositBodySchema,
  executionIdParamSchema,
  listQuerySchema,
  lookupBodySchema,
  prepareBodySchema,
  refundAddressBodySchema,
  submitBodySchema,
  walletParamSchema,
  type CancelRequest,
  type DepositRequest,
  type ListQuery,
  type LookupRequest,
  type PrepareRequest,
  type RefundAddressRequest,
  type SubmitRequest,
} from './request-schemas';
import { jsonDepth, validator } from '../http/validate';
import type { AppDeps } from '../deps';

const validWallet = validator<string>(walletParamSchema, 'wallet path parameter', '');
const validExecutionId = validator<string>(executionIdParamSchema, 'executionId path parameter', '');
const validPrepareBody = validator<PrepareRequest>(prepareBodySchema, 'request body');
const validSubmitBody = validator<SubmitRequest>(submitBodySchema, 'request body');
const validDepositBody = validator<DepositRequest>(depositBodySchema, 'request body');
const validCancelBody = validator<CancelRequest>(cancelBodySchema, 'request body');
const validRefundAddressBody = validator<RefundAddressRequest>(refundAddressBodySchema, 'request body');
const validLookupBody = validator<LookupRequest>(lookupBodySchema, 'request body');
const validListQuery = validator<ListQuery>(listQuerySchema, 'query string', '');

/** The list route's query: statuses known, page size in range. */
function listRequest(query: unknown) {
  const q = validListQuery(query);
  const statuses = q.status?.split(',');
  const unknown = statuses?.find((s) => !(EXECUTION_STATUSES as readonly string[]).includes(s));
  if (unknown !== undefined) throw badRequest(`status ${JSON.stringify(unknown)} is not one of ${EXECUTION_STATUSES.join(', ')}`);
  const pageSize = q.pageSize === undefined ? PAGE_SIZE.default : Number(q.pageSize);
  if (pageSize < PAGE_SIZE.min || pageSize > PAGE_SIZE.max)
    throw badRequest(`pageSize must be between ${PAGE_SIZE.min} and ${PAGE_SIZE.max}`);
  return { statuses: statuses as ExecutionStatus[] | undefined, pageSize, pageToken: q.pageToken };
}

const SSE_KEEPALIVE_MS = 15_000;
/** A subscriber whose unsent events pass this is ended (it reconnects) rather than buffered without bound. */
const SSE_MAX_BUFFERED_BYTES = 1024 * 1024;

/**
 * 400 when the signer key decodes to 32 bytes that are no curve point: no signature could ever
 * verify. Undecodable and small-order keys are left to ExecutionService.prepare, which names them.
 */
function refuseOffCurveSigner(text: string): void {
  let key: Uint8Array;
  try {
    key = decodeKey(text);
  } catch {
    return;
  }
  if (!isWeakPublicKey(key) && !isCurvePoint(key))
    throw badRequest('signerPublicKey is not an ed25519 public key (not a point on the curve)');
}

/** The wallet's budget for one signed action; its signature verified, the client's failed-auth point is given back. */
function walletBudget(ctx: Context, limits: RateLimits, wallet: string): WalletBudget {
  return { ...limits.walletBudget(wallet), verified: () => credentialVerified(ctx) };
}

/**
 * The execution routes (docs/api-executions.md); error bodies are `{ error }`. Routes without a token are
 * limited per client, a wallet's signed actions per wallet once verified, routes with a token per
 * token id, and failed authentications per client (api/http/rate-limit.ts).
 */
export function executionRoutes(
  router: Router,
  deps: AppDeps,
  executions: ExecutionService,
  limits: RateLimits,
  events: ExecutionEventHub,
): void {
  const limit = deps.config.bodyLimitBytes;

  // Before prepare's route, whose path it also matches: `lookup` is never a wallet (WALLET_PARAM_PATTERN).
  router.post('/api/v1/executions/lookup', limits.publicRoute, async (ctx) => {
    const body = validLookupBody(await readJsonBody(ctx, limit));
    // Each item past the first costs one more read of the client's budget.
    await limits.reads(ctx, body.executions.length - 1);
    ctx.body = { result: await lookupExecutions(deps.executionStore, executions.progress, body) };
  });

  router.post('/api/v1/executions/:wallet', limits.authFailures, async (ctx) => {
    const wallet = validWallet(ctx.params.wallet);
    const principal = authenticate(ctx, deps.tokens);
    await limits.token(principal.id);
    requireScope(principal, 'executions:prepare');
    const body = validPrepareBody(await readJsonBody(ctx, limit));
    if (jsonDepth(body.intent, MAX_INTENT_DEPTH) > MAX_INTENT_DEPTH)
      throw badRequest(`intent is nested deeper than ${MAX_INTENT_DEPTH} levels`);
    refuseOffCurveSigner(body.signerPublicKey ?? wallet);
    const { record, replayed } = await executions.prepare(wallet, body);
    ctx.state.workflowId = executionWorkflowId(wallet, record.executionId);
    // A retried prepare with the same content is answered, not refused.
    if (replayed) ctx.set('Idempotent-Replayed', 'true');
    ctx.status = replayed ? 200 : 201;
    const answer = await executions.reasoned(record);
    ctx.body = { result: record.depositTarget ? { ...answer, refundPolicy: refundPolicy(deps.config, record.depositTarget) } : answer };
  });

  router.get('/api/v1/executions/:wallet', limits.publicRoute, async (ctx) => {
    const wallet = validWallet(ctx.params.wallet);
    ctx.body = await executions.list(wallet, listRequest(ctx.query));
  });

  router.post('/api/v1/executions/:wallet/submit', limits.authFailures, limits.publicRoute, async (ctx) => {
    const wallet = validWallet(ctx.params.wallet);
    const body = validSubmitBody(await readJsonBody(ctx, limit));
    ctx.state.workflowId = executionWorkflowId(wallet, body.executionId);
    ctx.state.executionId = body.executionId;
    const status = await executions.submit(wallet, body, walletBudget(ctx, limits, wallet));
    ctx.state.outcome = status;
    ctx.body = { result: { status } };
  });

  router.post('/api/v1/executions/:wallet/:executionId/deposit', limits.authFailures, async (ctx) => {
    const wallet = validWallet(ctx.params.wallet);
    const executionId = validExecutionId(ctx.params.executionId);
    const principal = authenticate(ctx, deps.tokens);
    await limits.token(principal.id);
    requireScope(principal, 'executions:deposit');
    const body = validDepositBody(await readJsonBody(ctx, limit));
    // The schema's pattern bounds the digits (78); the value is bounded here.
    if (body.amount !== undefined && !isBaseUnits(body.amount)) throw badRequest('request body: amount must be at most 2^256 − 1');
    ctx.state.workflowId = executionWorkflowId(wallet, executionId);
    ctx.body = { result: await executions.deposit(wallet, executionId, body) };
  });

  router.get('/api/v1/executions/:wallet/:executionId', limits.publicRoute, async (ctx) => {
    const wallet = validWallet(ctx.params.wallet);
    const executionId = validExecutionId(ctx.params.executionId);
    ctx.state.workflowId = executionWorkflowId(wallet, executionId);
    const record = await executions.get(wallet, executionId);
    // The record is the workflow's while it is open: a read model that is down costs only its refunds summary.
    const answer = await executions.answer(record).catch((err: unknown) => {
      deps.logger.warn({ err, workflowId: ctx.state.workflowId }, 'refunds summary left out: the read model did not answer');
      return executions.reasoned(record);
    });
    ctx.body = { result: answer };
  });

  router.post('/api/v1/executions/:wallet/:executionId/cancel', limits.authFailures, limits.publicRoute, async (ctx) => {
    const wallet = validWallet(ctx.params.wallet);
    const executionId = validExecutionId(ctx.params.executionId);
    const body = validCancelBody(await readJsonBody(ctx, limit));
    ctx.state.workflowId = executionWorkflowId(wallet, executionId);
    const record = await executions.cancel(wallet, executionId, body, walletBudget(ctx, limits, wallet));
    ctx.state.outcome = record.status;
    ctx.body = { result: record };
  });

  router.post('/api/v1/executions/:wallet/:executionId/refund-address', limits.authFailures, limits.publicRoute, async (ctx) => {
    const wallet = validWallet(ctx.params.wallet);
    const executionId = validExecutionId(ctx.params.executionId);
    const body = validRefundAddressBody(await readJsonBody(ctx, limit));
    ctx.state.workflowId = executionWorkflowId(wallet, executionId);
    ctx.body = { result: await executions.setRefundAddress(wallet, executionId, body, walletBudget(ctx, limits, wallet)) };
  });

  router.get('/api/v1/executions/:wallet/:executionId/events', limits.publicRoute, async (ctx) => {
    const wallet = validWallet(ctx.params.wallet);
    const executionId = validExecutionId(ctx.params.executionId);
    const workflowId = executionWorkflowId(wallet, executionId);
    ctx.state.workflowId = workflowId;
    const release = events.admit(limits.clientIp(ctx));
    let record: ExecutionRecord;
    try {
      // The read model first: an idle stream costs Temporal nothing (decision 0064).
      const stored = await deps.executionStore.get(wallet, executionId).catch(() => undefined);
      record = stored ?? (await executions.get(wallet, executionId));
    } catch (err) {
      release();
      throw err;
    }
    // The refund rows the stream follows; a read model that is down leaves them to the hub's next read.
    const read = await events.refundsOf(workflowId).catch(() => undefined);
    const seen = seenBy(ctx.get('Last-Event-ID'), record, read?.refunds);
    const first = eventsSince(seen, record, read?.refunds);
    // An EventSource reconnecting after everything there will be: 204 tells it to stop (HTML spec, "fail the connection").
    if (first === '' && isClosed(record, read?.refunds)) {
      release();
      ctx.status = 204;
      return;
    }
    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    const stream = new PassThrough();
    ctx.status = 200;
    ctx.type = 'text/event-stream';
    ctx.set('Cache-Control', 'no-cache, no-transform');
    ctx.set('X-Accel-Buffering', 'no');
    ctx.body = stream;
    stream.write('retry: 3000\n\n' + first);
    if (isClosed(record, read?.refunds)) {
      release();
      stream.end();
      return;
    }
    const keepalive = setInterval(() => stream.write(': keep-alive\n\n'), SSE_KEEPALIVE_MS);
    // The stream ends after its lifetime; EventSource reconnects and resumes from Last-Event-ID.
    const lifetime = setTimeout(() => stream.end(), events.maxLifetimeMs);
    const unsubscribe = events.subscribe(record, seenAll(record, read?.refunds), read, {
      write: (text) => {
        stream.write(text);
        return stream.writableLength <= SSE_MAX_BUFFERED_BYTES;
      },
      end: () => stream.end(),
    });
    const cleanup = () => {
      clearInterval(keepalive);
      clearTimeout(lifetime);
      unsubscribe();
      release();
    };
    stream.once('close', cleanup);
    stream.once('finish', cleanup);
    ctx.req.once('close', () => {
      cleanup();
      stream.end();
    });
  });
}
