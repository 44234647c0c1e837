import type { Client } from '@temporalio/client';
import { nodeName } from '../../domain/node-names';
import { changeState, type BatchChangeStatus } from '../../domain/batch-status';
import type { WhitelistKind } from '../../domain/whitelist-messages';
import { batchStatusQuery, whitelistBatchWorkflowId, type BatchOutcome, type BatchWorkflowStatus } from '../../contracts/temporal';
import { BATCH_FAILED_MESSAGE } from './routes';
import { withinMs } from '../temporal/call';
import { mapTemporalError } from '../temporal/errors';

const TEMPORAL_CALL_MS = 5_000;

/** `GET /chain/whitelists/batches/{batchId}`'s result. */
export interface BatchStatus {
  batchId: string;
  tokenId: string;
  /** The workflow's status, lowercase: running, completed, terminated, timed_out, ... */
  workflowStatus: string;
  /** The HTTP answer the batch gave (or gives, to a retry); absent until known. */
  outcome?: { status: BatchOutcome['status']; errorMessage?: string };
  startedAt: string;
  /** When the workflow finished: every change applied, reverted or not applied. */
  closedAt?: string;
  /** Every change in request order. */
  changes: BatchChangeStatus[];
  /** The kinds the batch touches (for the read scope check); not part of the answer. */
  kinds: WhitelistKind[];
}

/** The client-facing outcome: as POST /chain/whitelists/ answered it (a 500 names no node). */
function publicOutcome(outcome: BatchOutcome): NonNullable<BatchStatus['outcome']> {
  if (outcome.status === 200) return { status: 200 };
  if (outcome.status === 500) return { status: 500, errorMessage: BATCH_FAILED_MESSAGE };
  return { status: outcome.status, ...(outcome.errorMessage === undefined ? {} : { errorMessage: outcome.errorMessage }) };
}

/**
 * Reads a batch from its workflow while Temporal keeps it: `describe` for the times and status,
 * the `batchStatus` query for the outcome and each change. Queries write nothing to history.
 * Each change names its node as `node-N` (`nodes`: STORAGE_NODES), never by address.
 */
export async function readBatchStatus(client: Client, batchId: string, nodes: readonly string[]): Promise<BatchStatus> {
  const handle = client.workflow.getHandle(whitelistBatchWorkflowId(batchId));
  let description: Awaited<ReturnType<typeof handle.describe>>;
  let summary: BatchWorkflowStatus;
  try {
    [description, summary] = await withinMs(client, TEMPORAL_CALL_MS, () =>
      Promise.all([handle.describe(), handle.query(batchStatusQuery)]),
    );
  } catch (err) {
    throw mapTemporalError(err, `whitelist batch ${batchId}`);
  }
  const running = description.status.name === 'RUNNING';
  const httpStatus = summary.outcome?.status;
  const changes = summary.changes.map(({ node, replicas, changed, superseded, op_type, kind, entry }) => ({
    op_type,
    kind,
    entry,
    node: nodeName(nodes, node),
    // A change is applied once a majority of its replicas applied it (decision 0093).
    state: changeState(
      (replicas ?? [node]).map((replica) => summary.nodes[replica] ?? 'pending'),
      httpStatus,
      running,
    ),
    ...(changed === undefined ? {} : { changed }),
    ...(superseded ? { superseded } : {}),
  }));
  return {
    batchId,
    tokenId: summary.tokenId,
    workflowStatus: description.status.name.toLowerCase(),
    ...(summary.outcome ? { outcome: publicOutcome(summary.outcome) } : {}),
    startedAt: description.startTime.toISOString(),
    ...(description.closeTime ? { closedAt: description.closeTime.toISOString() } : {}),
    changes,
    kinds: [...new Set(changes.map((c) => c.kind))],
  };
}
