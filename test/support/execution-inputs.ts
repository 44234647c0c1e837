import { randomUUID } from 'node:crypto';
import { executionWorkflowId, type ExecutionWorkflowInput, type SubmitSignatureArgs } from '../../contracts/temporal';

/**
 * A fresh workflow id (`exec:wallet:<uuid>`) and the execution workflow's input, created at `nowMs`:
 * what tests that start the workflow directly (no API) give it.
 */
export function executionInput(
  nowMs: number,
  options: { ttlMs: number; lingerSeconds: number; webhooks?: boolean },
): { workflowId: string; input: ExecutionWorkflowInput } {
  const executionId = randomUUID();
  const workflowId = executionWorkflowId('wallet', executionId);
  const input: ExecutionWorkflowInput = {
    executionId,
    wallet: 'wallet',
    intent: { a: 1 },
    intentHash: 'f'.repeat(64),
    signerPublicKey: `0x${'1'.repeat(64)}`,
    createdAt: new Date(nowMs).toISOString(),
    expiresAt: new Date(nowMs + options.ttlMs).toISOString(),
    lingerSeconds: options.lingerSeconds,
    ...(options.webhooks ? { webhooks: true } : {}),
  };
  return { workflowId, input };
}

/** The submitSignature Update's arguments with `signature` (already verified, as the API sends them). */
export const submitArgs = (signature: string): SubmitSignatureArgs => ({
  payload: {
    signature,
    publicKey: `0x${'1'.repeat(64)}`,
    connectEnvelope: { address: 'wallet', domain: 'localhost', timestamp: 1 },
    submittedAt: '2026-11-23T00:00:00.000Z',
  },
  signingMessage: 'message',
});
