import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { nacl25519Signer, signCancelSync } from '@intent-service/client';
import { eventually } from '../../scripts/lib/eventually';
import { nowSeconds, sampleIntent, type TestWallet } from '../../scripts/lib/wallets';
import { request } from './http';
import type { Stack } from './stack';

export { eventually } from '../../scripts/lib/eventually';
export { newWallet, nowSeconds, sampleIntent, signedBody, type TestWallet } from '../../scripts/lib/wallets';

/** POST prepare with the all-scopes token; returns the HTTP answer. */
export function prepare(stack: Stack, wallet: TestWallet, body: Record<string, unknown> = {}, token = stack.tokens.all) {
  return request(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}`, {
    token,
    json: { executionId: `ex-${randomUUID()}`, intent: sampleIntent(), ...body },
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
