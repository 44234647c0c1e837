import os from 'node:os';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Logger } from 'pino';
import type { ApiConfig, WorkerConfig } from './config';
import { temporalConnectionOptions } from './temporal-connection';
import { readModelSharing, type SharingVerdict } from '../domain/read-model-sharing';

/**
 * Gathers what domain/read-model-sharing needs at an API's or worker's start: which hosts poll the
 * service's task queue (every partition: the enhanced description) and which database this process
 * uses. A Temporal that cannot be asked is no verdict of its own: the caller's start fails on it
 * anyway.
 */
export async function checkReadModelSharing(config: ApiConfig | WorkerConfig, address: string): Promise<SharingVerdict> {
  if (config.database.url) return { verdict: 'ok' };
  const connection = await Connection.connect(temporalConnectionOptions(config, address));
  try {
    const described = await connection.workflowService.describeTaskQueue({
      namespace: config.temporal.namespace,
      taskQueue: { name: config.temporal.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      apiMode: temporal.api.enums.v1.DescribeTaskQueueMode.DESCRIBE_TASK_QUEUE_MODE_ENHANCED,
      reportPollers: true,
    });
    // Legacy mode lists the root partition's pollers; enhanced mode lists every partition's, per build.
    type Pollers = { pollers?: Array<{ identity?: string | null }> | null };
    const perBuild = Object.values(described.versionsInfo ?? {}).flatMap((v) =>
      Object.values((v.typesInfo ?? {}) as Record<string, Pollers>),
    );
    const identities = [described as Pollers, ...perBuild]
      .flatMap((p) => p.pollers ?? [])
      .map((p) => p.identity ?? '')
      .filter((i) => i !== '');
    return readModelSharing({
      database: 'sqlite',
      temporalAddress: address,
      thisHost: os.hostname(),
      pollerIdentities: identities,
      taskQueue: config.temporal.taskQueue,
    });
  } finally {
    await connection.close();
  }
}

/**
 * The start-up check of the API and the worker (docs/decisions/0077): false when this process would
 * split the read model across hosts (logged as an error: it must not start); a warning when it
 * cannot tell.
 */
export async function sharedReadModel(config: ApiConfig | WorkerConfig, temporalAddress: string, logger: Logger): Promise<boolean> {
  const sharing = await checkReadModelSharing(config, temporalAddress);
  if (sharing.verdict === 'refuse') {
    logger.error({ reason: sharing.message }, 'read model would be split across hosts; refusing to start');
    return false;
  }
  if (sharing.verdict === 'warn') logger.warn({ reason: sharing.message }, 'read model is this host only');
  return true;
}
