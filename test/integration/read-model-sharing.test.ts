import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { projectRoot } from '../../config/config';
import { startChildService } from '../../scripts/lib/child-service';
import { stackEnv } from '../support/service-process';
import { getStack, type Stack } from '../support/stack';

/**
 * A worker or an API on a SQLite read model, on a task queue another host polls, would keep records,
 * deposit addresses and refunds of its own: it refuses to start (docs/decisions/0077).
 */
describe('read model sharing: a process on SQLite refuses to start beside another host', function () {
  this.timeout(60_000);
  let stack: Stack;
  let tmp: string;
  const taskQueue = `sharing-${process.pid}-${Date.now()}`;
  before(async () => {
    stack = await getStack();
    tmp = mkdtempSync(path.join(os.tmpdir(), 'sharing-'));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  /** Polls the task queue once as a worker on another host would (identity `pid@host`); the server needs a deadline of a few seconds. */
  async function pollFromElsewhere(): Promise<void> {
    const connection = await Connection.connect({ address: stack.temporal.address });
    try {
      await connection
        .withDeadline(Date.now() + 3000, () =>
          connection.workflowService.pollWorkflowTaskQueue({
            namespace: stack.config.temporal.namespace,
            taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
            identity: '4242@another-host.example',
          }),
        )
        .catch(() => undefined);
    } finally {
      await connection.close();
    }
  }

  for (const [name, script] of [
    ['worker', 'worker/main.js'],
    ['API', 'api/main.js'],
  ] as const) {
    it(`when another host polls the task queue and this ${name} has no DATABASE_URL, then it exits 1 saying the read model would be split`, async () => {
      await pollFromElsewhere();
      const env = stackEnv(stack, {
        TEMPORAL_TASK_QUEUE: taskQueue,
        DATABASE_FILE: path.join(tmp, `${name}.sqlite`),
        PORT: '0',
        OPERATOR_PORT: '0',
        WORKER_METRICS_PORT: '0',
      });
      delete env.DATABASE_URL;
      const lines: string[] = [];
      const child = startChildService(name, process.execPath, [path.join(projectRoot, 'dist', script)], {
        readyPattern: /read model would be split across hosts/,
        env,
        echo: false,
      });
      child.child.stdout!.on('data', (c: Buffer) => lines.push(c.toString()));
      try {
        const [, code] = await Promise.all([child.ready, child.exited]);
        assert.equal(code, 1, lines.join(''));
        assert.match(lines.join(''), /another-host\.example/);
      } finally {
        // A process that did not refuse is running: it must not outlive the test.
        await child.stop(5000);
      }
    });
  }
});
