import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { NativeConnection } from '@temporalio/worker';

/** The project's version, from its package.json (this file runs from dist/worker/). */
const packageVersion = (JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;

/** A worker's place in a Worker Deployment (decision 0068). */
export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/**
 * The build id of a worker that runs `bundle`: the project's version and the first 12 hex
 * digits of the bundle's SHA-256. Workers built from the same code share it; a change to any
 * workflow code, or to what the bundle includes, makes a new one.
 */
export function buildIdOf(bundle: string): string {
  return `${packageVersion}-${createHash('sha256').update(bundle).digest('hex').slice(0, 12)}`;
}

/** How long a worker keeps asking for its version to become current (the server learns of it from the first poll). */
const PROMOTE_WITHIN_MS = 60_000;
const PROMOTE_RETRY_MS = 250;

/**
 * Makes `version` the current version of its deployment: workflows started from now on run on
 * it, pinned workflows stay on the version that started them. Retries while the server does not
 * know the version yet (until this worker's first poll reaches it), and until the version has
 * polled every one of `taskQueues` (the server learns a version's task queues from their polls),
 * so that the promotion covers each queue this process serves, not only the first one polled.
 * Resolves once it is current; rejects after PROMOTE_WITHIN_MS, or with the last error once
 * `signal` aborts.
 */
export async function makeCurrent(
  connection: NativeConnection,
  namespace: string,
  version: DeploymentVersion,
  signal?: AbortSignal,
  taskQueues: readonly string[] = [],
): Promise<void> {
  const deadline = Date.now() + PROMOTE_WITHIN_MS;
  for (;;) {
    try {
      if (taskQueues.length > 0) {
        const described = await connection.workflowService.describeWorkerDeploymentVersion({
          namespace,
          deploymentVersion: { deploymentName: version.deploymentName, buildId: version.buildId },
        });
        const polled = new Set((described.workerDeploymentVersionInfo?.taskQueueInfos ?? []).map((q) => q.name));
        const missing = taskQueues.filter((q) => !polled.has(q));
        if (missing.length > 0) throw new Error(`version ${version.buildId} has not polled ${missing.join(', ')} yet`);
      }
      await connection.workflowService.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName: version.deploymentName,
        buildId: version.buildId,
        identity: `worker ${version.deploymentName}.${version.buildId}`,
      });
      return;
    } catch (err) {
      if (signal?.aborted || Date.now() >= deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, PROMOTE_RETRY_MS));
    }
  }
}
