import { ApplicationFailure } from '@temporalio/activity';
import type { NodeApplyRequest } from '../contracts/activities';
import type { ChangeResult } from '../domain/whitelist-messages';
import { checkApplyResponse, ROUTES, type ApplyRequest as WireApplyRequest } from '../contracts/storage-node-protocol';
import { NodeFailure } from '../contracts/temporal';
import { ANSWER_TOO_LARGE, postJson, type PostAnswer, type RequestOptions } from './http-post';

/** Checks a storage node's answer against the wire schema and the request: a node answering garbage must not be trusted. */
export function parseApplyAnswer(text: string, request: NodeApplyRequest): ChangeResult[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error('answer is not JSON');
  }
  const checked = checkApplyResponse(json);
  if (!checked.ok) throw new Error(`answer has the wrong shape (${checked.problem})`);
  const body = checked.value;
  if (body.batchId !== request.batchId) throw new Error('answer has the wrong shape (another batchId)');
  if (body.results.length !== request.changes.length) throw new Error('answer has the wrong number of results');
  return request.changes.map((change, i) => {
    const r = body.results[i];
    if (r.kind !== change.kind || r.entry !== change.entry || r.op_type !== change.op_type) {
      throw new Error(`result ${i} does not match its change`);
    }
    return { ...change, changed: r.changed, superseded: r.superseded };
  });
}

const CONNECT_REFUSED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

function errorCode(err: unknown): string | undefined {
  let e: any = err;
  for (let depth = 0; e && depth < 5; depth++, e = e.cause) if (typeof e.code === 'string') return e.code;
  return undefined;
}

/**
 * POSTs one batch to one node and returns its per-change results. Failures are ApplicationFailures
 * whose type tells the workflow whether the node may have applied the batch (see NodeFailure).
 */
export async function postApply(request: NodeApplyRequest, options: RequestOptions): Promise<ChangeResult[]> {
  // Field by field: callers pass wider objects (FirstRoundNodeInput), and the node refuses unknown fields.
  const { batchId, position, changes, tokenId, revert, indexes } = request;
  const body: WireApplyRequest = {
    batchId,
    position,
    changes,
    ...(tokenId === undefined ? {} : { tokenId }),
    ...(revert ? { revert } : {}),
    ...(indexes === undefined ? {} : { indexes }),
  };
  let answer: PostAnswer;
  try {
    answer = await postJson(`${request.node}${ROUTES.apply}`, JSON.stringify(body), {
      ...options,
      spanAttributes: { 'intent_service.batch_id': batchId, ...(revert ? { 'intent_service.revert': true } : {}) },
    });
  } catch (err) {
    const code = errorCode(err);
    if (code && CONNECT_REFUSED.has(code)) {
      throw ApplicationFailure.create({ type: NodeFailure.unreachable, message: `${request.node} unreachable (${code})` });
    }
    if ((err as Error).name === ANSWER_TOO_LARGE) {
      throw ApplicationFailure.create({ type: NodeFailure.badResponse, message: `${request.node}: ${(err as Error).message}` });
    }
    throw ApplicationFailure.create({
      type: NodeFailure.timeout,
      message: `${request.node} did not answer (${code ?? (err as Error).name})`,
    });
  }
  if (answer.status < 200 || answer.status > 299) {
    throw ApplicationFailure.create({ type: NodeFailure.rejected, message: `${request.node} answered HTTP ${answer.status}` });
  }
  try {
    return parseApplyAnswer(answer.text, request);
  } catch (err) {
    throw ApplicationFailure.create({ type: NodeFailure.badResponse, message: `${request.node}: ${(err as Error).message}` });
  }
}
