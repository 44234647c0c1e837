import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import nacl from 'tweetnacl';
import { toBase58 } from '../../domain/encoding';
import { nacl25519Signer, signCancelSync, signSubmitSync } from '@intent-service/client';
import { request } from './http';
import type { Stack } from './stack';

/** A wallet as a frontend holds it: a tweetnacl key pair whose base58 public key is the wallet id. */
export interface TestWallet {
  id: string;
  secretKey: Uint8Array;
  publicKey: Uint8Array;
}

export function newWallet(): TestWallet {
  const pair = nacl.sign.keyPair();
  return { id: toBase58(pair.publicKey), secretKey: pair.secretKey, publicKey: pair.publicKey };
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export const sampleIntent = () => ({
  action: 'swap',
  from: { chain: 'solana', token: 'USDC', amount: '125.50' },
  to: { chain: 'base', token: 'ETH' },
  nonce: randomUUID(),
});

/** POST prepare with the all-scopes token; returns the HTTP answer. */
export function prepare(stack: Stack, wallet: TestWallet, body: Record<string, unknown> = {}, token = stack.tokens.all) {
  return request(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}`, {
    token,
    json: { executionId: `ex-${randomUUID()}`, intent: sampleIntent(), ...body },
  });
}

/** A valid submit body for an execution, signed by the SDK as a frontend would. */
export function signedBody(
  wallet: TestWallet,
  executionId: string,
  intent: unknown,
  options: { domain?: string; timestamp?: number; encoding?: 'hex' | 'base58' } = {},
) {
  return signSubmitSync(nacl25519Signer(wallet.secretKey), {
    wallet: wallet.id,
    executionId,
    intent,
    domain: options.domain ?? 'localhost',
    timestamp: options.timestamp ?? nowSeconds(),
    encoding: options.encoding,
  });
}

export function submit(stack: Stack, walletId: string, body: unknown) {
  return request(stack.api.url, 'POST', `/api/v1/executions/${walletId}/submit`, { json: body });
}

export function depositHttp(stack: Stack, walletId: string, executionId: string, body: unknown, token = stack.tokens.all) {
  return request(stack.api.url, 'POST', `/api/v1/executions/${walletId}/${executionId}/deposit`, { token, json: body });
}

export function getExecution(stack: Stack, walletId: string, executionId: string) {
  return request(stack.api.url, 'GET', `/api/v1/executions/${walletId}/${executionId}`);
}

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes (for eventually consistent reads). */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, timeoutMs = 10_000, stepMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined | false;
  while (Date.now() < deadline) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
}

/** A valid cancel body for an execution, signed by the wallet through the SDK. */
export function cancelBody(
  wallet: TestWallet,
  executionId: string,
  options: { domain?: string; timestamp?: number; secretKey?: Uint8Array } = {},
) {
  return signCancelSync(nacl25519Signer(options.secretKey ?? wallet.secretKey), {
    wallet: wallet.id,
    executionId,
    domain: options.domain ?? 'localhost',
    timestamp: options.timestamp ?? nowSeconds(),
  });
}

export function cancelHttp(base: string, walletId: string, executionId: string, body: unknown) {
  return request(base, 'POST', `/api/v1/executions/${walletId}/${executionId}/cancel`, { json: body });
}

export function listHttp(base: string, walletId: string, query = '') {
  return request(base, 'GET', `/api/v1/executions/${walletId}${query}`);
}

/**
 * The event types of an execution's history once the workflow is idle: it has closed, or every
 * activity it scheduled (the read model write, webhooks) has completed and its last workflow task is
 * done, so the next event can only come from a new request. Tests that count history events start here.
 */
export async function settledEventTypes(stack: Pick<Stack, 'client'>, workflowId: string): Promise<string[]> {
  return eventually(
    async () => {
      const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
      const types = (history.events ?? []).map((e) => String(temporal.api.enums.v1.EventType[e.eventType ?? 0]));
      const count = (t: string) => types.filter((x) => x === `EVENT_TYPE_${t}`).length;
      const last = types[types.length - 1];
      // A closed execution (it closes at its final status) adds nothing more either.
      // Open: no workflow task and no activity still to finish (an Update's events follow the
      // task that completed it).
      const idle =
        last === 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED' ||
        (count('ACTIVITY_TASK_SCHEDULED') === count('ACTIVITY_TASK_COMPLETED') &&
          count('WORKFLOW_TASK_SCHEDULED') ===
            count('WORKFLOW_TASK_COMPLETED') + count('WORKFLOW_TASK_FAILED') + count('WORKFLOW_TASK_TIMED_OUT'));
      return idle && types;
    },
    15_000,
    100,
  );
}
