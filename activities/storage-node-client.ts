import { ApplicationFailure } from '@temporalio/activity';
import type { NodeResult } from '../domain/whitelist-batch-plan';
import type { WhitelistChange } from '../domain/whitelist-messages';
import { NodeFailure } from '../workflows/definitions';

export interface ApplyRequest {
  node: string;
  batchId: string;
  changes: WhitelistChange[];
}

/** Checks a storage node's answer field by field: a node answering garbage must not be trusted. */
export function parseApplyAnswer(text: string, request: ApplyRequest): NodeResult[] {
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error('answer is not JSON');
  }
  if (!body || body.batchId !== request.batchId || !Array.isArray(body.results)) throw new Error('answer has the wrong shape');
  if (body.results.length !== request.changes.length) throw new Error('answer has the wrong number of results');
  return request.changes.map((change, i) => {
    const r = body.results[i];
    if (!r || r.kind !== change.kind || r.entry !== change.entry || r.op_type !== change.op_type || typeof r.changed !== 'boolean') {
      throw new Error(`result ${i} does not match its change`);
    }
    return { ...change, changed: r.changed };
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
export async function postApply(request: ApplyRequest, options: { timeoutMs: number; signal?: AbortSignal }): Promise<NodeResult[]> {
  const signals = [AbortSignal.timeout(options.timeoutMs), ...(options.signal ? [options.signal] : [])];
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${request.node}/v1/whitelists/apply`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ batchId: request.batchId, changes: request.changes }),
      signal: AbortSignal.any(signals),
    });
    text = await response.text();
  } catch (err) {
    const code = errorCode(err);
    if (code && CONNECT_REFUSED.has(code)) {
      throw ApplicationFailure.create({ type: NodeFailure.unreachable, message: `${request.node} unreachable (${code})` });
    }
    throw ApplicationFailure.create({ type: NodeFailure.timeout, message: `${request.node} did not answer (${code ?? (err as Error).name})` });
  }
  if (!response.ok) {
    throw ApplicationFailure.create({ type: NodeFailure.rejected, message: `${request.node} answered HTTP ${response.status}` });
  }
  try {
    return parseApplyAnswer(text, request);
  } catch (err) {
    throw ApplicationFailure.create({ type: NodeFailure.badResponse, message: `${request.node}: ${(err as Error).message}` });
  }
}
