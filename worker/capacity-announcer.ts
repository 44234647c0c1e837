import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { NativeConnection } from '@temporalio/worker';
import type { WorkerCapacityStore } from '../db/worker-capacity';
import type { DeploymentVersion } from './deployment-version';

/** How often a worker renews its announcement. */
export const ANNOUNCE_EVERY_MS = 5_000;
/** How long an announcement counts unless renewed: a worker that stops without a word stops counting after this. */
export const ANNOUNCEMENT_TTL_MS = 15_000;

/** A name for this worker process's row: the host, the pid and a random part (a restarted process is a new worker). */
export const workerCapacityId = () => `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

/** Whether `version` is its deployment's current version now: where new runs go. */
async function isCurrent(connection: NativeConnection, namespace: string, version: DeploymentVersion): Promise<boolean> {
  const described = await connection.workflowService.describeWorkerDeployment({ namespace, deploymentName: version.deploymentName });
  const current = described.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion;
  return current?.buildId === version.buildId;
}

/**
 * Announces the open runs this worker takes (WORKER_OPEN_RUNS) in the read model every
 * ANNOUNCE_EVERY_MS until `signal` aborts, then takes its row out (decision 0107). Each
 * announcement says whether the worker's build is the current one, asked of Temporal each time: a
 * worker of an older build still holds its pinned runs but takes no new ones. A failed round is
 * told to `onError` and tried again at the next; resolves after the row is taken out.
 */
export async function announceCapacity(options: {
  store: WorkerCapacityStore;
  connection: NativeConnection;
  namespace: string;
  version?: DeploymentVersion;
  openRuns: number;
  workerId: string;
  signal: AbortSignal;
  onError: (err: Error) => void;
}): Promise<void> {
  const { store, connection, namespace, version, openRuns, workerId, signal, onError } = options;
  while (!signal.aborted) {
    try {
      const current = version === undefined ? true : await isCurrent(connection, namespace, version);
      if (signal.aborted) break;
      await store.announce({ workerId, buildId: version?.buildId, openRuns, current }, new Date(Date.now() + ANNOUNCEMENT_TTL_MS));
    } catch (err) {
      if (!signal.aborted) onError(err as Error);
    }
    await new Promise<void>((resolve) => {
      const stop = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', stop);
        resolve();
      }, ANNOUNCE_EVERY_MS);
      signal.addEventListener('abort', stop, { once: true });
    });
  }
  await store.withdraw(workerId).catch(onError);
}
