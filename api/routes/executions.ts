import type Router from '@koa/router';
import { isCurvePoint, isWeakPublicKey } from '../ed25519';
import { decodeKey } from '../../domain/encoding';
import { badRequest } from '../../domain/errors';
import type { Deposit } from '../../domain/execution-state';
import { executionWorkflowId } from '../../workflows/definitions';
import { authenticate, requireScope } from '../auth';
import type { ExecutionService, PrepareRequest, SubmitRequest } from '../execution-service';
import type { RateLimits } from '../rate-limit';
import { readJsonBody } from '../http-body';
import {
  MAX_INTENT_DEPTH,
  depositBodySchema,
  executionIdParamSchema,
  prepareBodySchema,
  submitBodySchema,
  walletParamSchema,
} from '../schemas';
import { jsonDepth, validator } from '../validate';
import type { AppDeps } from '../deps';

const checkWallet = validator<string>(walletParamSchema, 'wallet path parameter', '');
const checkExecutionId = validator<string>(executionIdParamSchema, 'executionId path parameter', '');
const checkPrepare = validator<PrepareRequest>(prepareBodySchema, 'request body');
const checkSubmit = validator<SubmitRequest>(submitBodySchema, 'request body');
const checkDeposit = validator<Deposit>(depositBodySchema, 'request body');

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

/**
 * The execution routes of DESIGN.md; error bodies are `{ error }`. Routes without a token are
 * limited per client IP and wallet, routes with one per token id (api/rate-limit.ts).
 */
export function executionRoutes(router: Router, deps: AppDeps, executions: ExecutionService, limits: RateLimits): void {
  const limit = deps.config.bodyLimitBytes;

  router.post('/api/v1/executions/:wallet', async (ctx) => {
    const wallet = checkWallet(ctx.params.wallet);
    const principal = authenticate(ctx, deps.tokens);
    await limits.token(principal.id);
    requireScope(principal, 'executions:prepare');
    const body = checkPrepare(await readJsonBody(ctx, limit));
    if (jsonDepth(body.intent, MAX_INTENT_DEPTH) > MAX_INTENT_DEPTH)
      throw badRequest(`intent is nested deeper than ${MAX_INTENT_DEPTH} levels`);
    refuseOffCurveSigner(body.signerPublicKey ?? wallet);
    const record = await executions.prepare(wallet, body);
    ctx.state.workflowId = executionWorkflowId(wallet, record.executionId);
    ctx.status = 201;
    ctx.body = { result: record };
  });

  router.post('/api/v1/executions/:wallet/submit', limits.publicRoute, async (ctx) => {
    const wallet = checkWallet(ctx.params.wallet);
    const body = checkSubmit(await readJsonBody(ctx, limit));
    ctx.state.workflowId = executionWorkflowId(wallet, body.executionId);
    const status = await executions.submit(wallet, body);
    ctx.state.outcome = status;
    ctx.body = { result: { status } };
  });

  router.post('/api/v1/executions/:wallet/:executionId/deposit', async (ctx) => {
    const wallet = checkWallet(ctx.params.wallet);
    const executionId = checkExecutionId(ctx.params.executionId);
    const principal = authenticate(ctx, deps.tokens);
    await limits.token(principal.id);
    requireScope(principal, 'executions:deposit');
    const body = checkDeposit(await readJsonBody(ctx, limit));
    ctx.state.workflowId = executionWorkflowId(wallet, executionId);
    ctx.body = { result: await executions.deposit(wallet, executionId, body) };
  });

  router.get('/api/v1/executions/:wallet/:executionId', limits.publicRoute, async (ctx) => {
    const wallet = checkWallet(ctx.params.wallet);
    const executionId = checkExecutionId(ctx.params.executionId);
    ctx.state.workflowId = executionWorkflowId(wallet, executionId);
    ctx.body = { result: await executions.get(wallet, executionId) };
  });
}
