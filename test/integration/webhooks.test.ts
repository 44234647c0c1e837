import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import type { RunningApi } from '../../api/server';
import { projectRoot, type Config } from '../../config/config';
import { startChildService, type ChildService } from '../../scripts/lib/child-service';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { executionWorkflowId, refundAnnouncerScheduleId } from '../../contracts/temporal';
import { openDatabase } from '../../db/database';
import { RefundLedger } from '../../db/refund-ledger';
import { startWorker, type RunningWorker } from '../../worker/create-worker';
import { depositHttp, eventually, newWallet, prepare, sampleIntent, settledEventTypes, signedBody, submit } from '../support/executions';
import { request } from '../support/http';
import { freePort } from '../support/ports';
import { getStack, startStackApi, type Stack } from '../support/stack';

const RECEIVER = path.join(projectRoot, 'dist', 'test', 'support', 'webhook-receiver.js');

interface Delivery {
  id: string;
  event: { type: string; timestamp: string; data: { executionId: string; status: string } };
}

describe('integration: webhooks (Standard Webhooks, delivered by a Temporal activity, to a real receiver process)', function () {
  this.timeout(120_000);
  let stack: Stack;
  let config: Config;
  let worker: RunningWorker;
  let api: RunningApi;
  let receiver: ChildService | undefined;
  let port: number;
  let out: string;
  const secret = `whsec_${randomBytes(24).toString('base64')}`;

  const startReceiver = async () => {
    receiver = startChildService(
      'webhook-receiver',
      process.execPath,
      [RECEIVER, '--port', String(port), '--secret', secret, '--out', out],
      { readyPattern: /listening/, echo: false },
    );
    await receiver.ready;
  };
  const deliveries = (): Delivery[] =>
    existsSync(out)
      ? readFileSync(out, 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];

  // The announcer sweeps the ledger every 10 s by itself (the first case waits for that); the later
  // cases start a sweep at once, as `temporal schedule trigger` does, after the current one if any.
  const announceNow = () =>
    stack.client.schedule.getHandle(refundAnnouncerScheduleId(config.temporal.taskQueue)).trigger(ScheduleOverlapPolicy.BUFFER_ONE);

  // One call on the refunds ledger of the stack's read model, on a connection of its own.
  const ledgerDo = async <T>(fn: (ledger: RefundLedger) => Promise<T>): Promise<T> => {
    const database = await openDatabase({ sqliteFile: path.join(stack.tmpDir, 'read-model.sqlite') });
    try {
      return await fn(new RefundLedger(database));
    } finally {
      await database.close();
    }
  };

  before(async () => {
    stack = await getStack();
    port = await freePort();
    out = path.join(stack.tmpDir, `webhooks-${randomUUID()}.jsonl`);
    // Its own task queue, worker and API, with one webhook endpoint: the shared stack sends none.
    config = {
      ...stack.config,
      port: 0,
      temporal: { ...stack.config.temporal, taskQueue: `webhooks-${randomUUID()}` },
      webhooks: [{ url: `http://127.0.0.1:${port}/hooks`, secret }],
    };
    worker = await startWorker(config, stack.temporal.address);
    api = await startStackApi(stack, { config, logger: pino({ level: 'silent' }) });
  });
  after(async () => {
    await receiver?.stop(2000);
    await api?.close(1000);
    await worker?.shutdown();
  });

  it('when the receiver is down for a while, then the execution goes on unblocked, no history event is added per attempt, and after it comes back it has every status change exactly once (after dedupe by webhook-id), in order, each signature verified', async () => {
    await startReceiver();
    const wallet = newWallet();
    const executionId = `hook-${randomUUID()}`;
    const intent = sampleIntent();
    const workflowId = executionWorkflowId(wallet.id, executionId);
    assert.equal((await prepare({ ...stack, api } as Stack, wallet, { executionId, intent })).status, 201);
    await eventually(async () => deliveries().some((d) => d.event.data.executionId === executionId), 15_000);

    await receiver!.stop(2000); // down
    const started = Date.now();
    const dep = await depositHttp({ ...stack, api } as Stack, wallet.id, executionId, { txHash: '0xhook' });
    const sub = await submit({ ...stack, api } as Stack, wallet.id, signedBody(wallet, executionId, intent));
    assert.equal(dep.status, 200, dep.text);
    assert.equal(sub.body.result.status, 'SIGNING');
    assert.ok(Date.now() - started < 5000, 'the changes were answered while the receiver was down');

    // The delivery activity is retrying on the server: attempts pile up, history events do not.
    const pending = await eventually(
      async () => {
        const d = await stack.client.workflow.getHandle(workflowId).describe();
        const p = d.raw.pendingActivities?.find((a) => a.activityType?.name === 'deliverWebhook');
        return p && (p.attempt ?? 0) >= 3 && p;
      },
      30_000,
      250,
    );
    assert.match(String(pending.lastFailure?.message), /ECONNREFUSED|fetch failed|webhook/);
    // The failure, kept in Temporal and logged, names the receiver by its origin: never its path.
    assert.match(String(pending.lastFailure?.message), new RegExp(`webhook http://127\\.0\\.0\\.1:${port}: `));
    assert.doesNotMatch(String(pending.lastFailure?.message), /\/hooks/);
    const types = await stack.client.workflow.getHandle(workflowId).fetchHistory();
    const failedEvents = (types.events ?? []).filter((e) => e.activityTaskFailedEventAttributes || e.activityTaskTimedOutEventAttributes);
    assert.equal(failedEvents.length, 0, 'no history event per failed attempt');

    await startReceiver(); // back
    const mine = await eventually(
      async () => {
        const all = deliveries().filter((d) => d.event.type === 'execution.status_changed' && d.event.data.executionId === executionId);
        return new Set(all.map((d) => d.id)).size === 3 && all;
      },
      60_000,
      250,
    );
    const firstById = new Map<string, Delivery>();
    for (const d of mine) if (!firstById.has(d.id)) firstById.set(d.id, d);
    assert.deepEqual(
      [...firstById.values()].map((d) => d.event.data.status),
      ['PREPARED', 'OPERATION_PENDING', 'SIGNING'],
    );
    assert.deepEqual(
      [...firstById.keys()],
      [1, 2, 3].map((seq) => `${workflowId}:${seq}`),
      'webhook-id is the workflow id and the status sequence number',
    );
    for (const d of firstById.values()) {
      assert.equal(d.event.type, 'execution.status_changed');
      assert.ok(!Number.isNaN(Date.parse(d.event.timestamp)));
    }
    // Every status change was delivered, so the workflow is idle again with one activity per delivery.
    const settled = await settledEventTypes(stack, workflowId);
    assert.equal(settled.filter((t) => t === 'EVENT_TYPE_ACTIVITY_TASK_FAILED').length, 0);
  });

  it("when an execution refuses a deposit, then the receiver gets one refund.due event carrying the ledger row, its webhook-id the row's, signed, and the row is marked announced so no later sweep sends it again; recorded paid, one refund.paid follows", async () => {
    if (!receiver || receiver.child.exitCode !== null) await startReceiver();
    const wallet = newWallet();
    const executionId = `refund-hook-${randomUUID()}`;
    const viaApi = { ...stack, api } as Stack;
    assert.equal((await prepare(viaApi, wallet, { executionId })).status, 201);
    assert.equal((await depositHttp(viaApi, wallet.id, executionId, { txHash: '0xtaken' })).status, 200);
    assert.equal((await depositHttp(viaApi, wallet.id, executionId, { txHash: '0xowed', amount: '12' })).status, 409);
    const refundEvents = () =>
      deliveries().filter((d) => d.event.type === 'refund.due' && d.event.data.executionId === executionId) as unknown as Array<{
        id: string;
        event: { type: string; timestamp: string; data: { id: string; txHash: string; amount: string; state: string; reason: string } };
      }>;
    // The sweep runs every 10 s (worker/refund-schedules.ts).
    const [first] = await eventually(async () => refundEvents().length > 0 && refundEvents(), 45_000, 250);
    assert.equal(first.event.data.txHash, '0xowed');
    assert.equal(first.event.data.amount, '12');
    assert.equal(first.event.data.state, 'due');
    assert.equal(first.event.data.reason, 'other-tx');
    assert.equal(first.id, `refund-due:${first.event.data.id}`);
    assert.equal(first.event.timestamp, (first.event.data as unknown as { createdAt: string }).createdAt);
    // The row is marked in the outbox, so a later sweep hands it over no second time.
    const database = await openDatabase({ sqliteFile: path.join(stack.tmpDir, 'read-model.sqlite') });
    try {
      const row = await database.db
        .selectFrom('refunds')
        .select(['announced_at'])
        .where('id', '=', first.event.data.id)
        .executeTakeFirstOrThrow();
      assert.ok(row.announced_at !== null);
      assert.deepEqual(
        (await new RefundLedger(database).unannounced(1000)).filter((r) => r.executionId === executionId),
        [],
      );
    } finally {
      await database.close();
    }
    assert.equal(new Set(refundEvents().map((d) => d.id)).size, 1);

    // Recorded paid by hand: one refund.paid with the row as settled.
    const refundTx = `0x${'5e'.repeat(32)}`;
    const settled = await request(api.url, 'POST', `/api/v1/refunds/${first.event.data.id}/refunded`, {
      json: { txHash: refundTx },
      token: stack.tokens.all,
    });
    assert.equal(settled.status, 200, settled.text);
    await announceNow();
    const paidEvents = () =>
      deliveries().filter((d) => d.event.type === 'refund.paid' && d.event.data.executionId === executionId) as unknown as Array<{
        id: string;
        event: { timestamp: string; data: { id: string; state: string; refundTxHash: string; settledAt: string } };
      }>;
    const [paid] = await eventually(async () => paidEvents().length > 0 && paidEvents(), 45_000, 250);
    assert.equal(paid.id, `refund-paid:${first.event.data.id}`);
    assert.deepEqual([paid.event.data.state, paid.event.data.refundTxHash], ['refunded', refundTx]);
    assert.equal(paid.event.timestamp, paid.event.data.settledAt);
  });

  it('when a row is held for a person, then the receiver gets one refund.held carrying the row and its reason (webhook-id per row and reason); held again for another reason, one more', async () => {
    if (!receiver || receiver.child.exitCode !== null) await startReceiver();
    const wallet = newWallet();
    const executionId = `refund-held-${randomUUID()}`;
    const viaApi = { ...stack, api } as Stack;
    assert.equal((await prepare(viaApi, wallet, { executionId })).status, 201);
    assert.equal((await depositHttp(viaApi, wallet.id, executionId, { txHash: '0xtaken' })).status, 200);
    assert.equal((await depositHttp(viaApi, wallet.id, executionId, { txHash: '0xheld', amount: '12' })).status, 409);
    const heldEvents = () =>
      deliveries().filter((d) => d.event.type === 'refund.held' && d.event.data.executionId === executionId) as unknown as Array<{
        id: string;
        event: { data: { id: string; state: string; holdReason: string } };
      }>;
    const database = await openDatabase({ sqliteFile: path.join(stack.tmpDir, 'read-model.sqlite') });
    try {
      const ledger = new RefundLedger(database);
      const [row] = await eventually(async () => {
        const rows = (await ledger.ofExecution(`exec:${wallet.id}:${executionId}`)).filter((r) => r.txHash === '0xheld');
        return rows.length > 0 && rows;
      }, 30_000);
      // What the refunder does when a row is above its limit, then when a spend by hand stops its address.
      const hold = (reason: string) =>
        database.db.updateTable('refunds').set({ state: 'held', hold_reason: reason }).where('id', '=', row.id).execute();
      await hold('above-limit');
      await announceNow();
      const [first] = await eventually(async () => heldEvents().length > 0 && heldEvents(), 45_000, 250);
      assert.equal(first.id, `refund-held:${row.id}:above-limit`);
      assert.deepEqual([first.event.data.state, first.event.data.holdReason], ['held', 'above-limit']);
      await hold('nonce-mismatch');
      await announceNow();
      const second = await eventually(async () => heldEvents().length > 1 && heldEvents()[1], 45_000, 250);
      assert.equal(second.id, `refund-held:${row.id}:nonce-mismatch`);
      assert.equal(second.event.data.holdReason, 'nonce-mismatch');
      assert.deepEqual(
        (await ledger.unannouncedHeld(1000)).filter((r) => r.executionId === executionId),
        [],
        'marked: no later sweep hands it over again',
      );
    } finally {
      await database.close();
    }
    assert.equal(new Set(heldEvents().map((d) => d.id)).size, 2);
  });

  it('when a row that was announced due is voided by a reorganisation and then due again, then the receiver gets refund.voided and refund.due once more, each with the row as it was and its numbered webhook-id', async () => {
    if (!receiver || receiver.child.exitCode !== null) await startReceiver();
    const wallet = newWallet();
    const executionId = `refund-void-${randomUUID()}`;
    const viaApi = { ...stack, api } as Stack;
    assert.equal((await prepare(viaApi, wallet, { executionId })).status, 201);
    assert.equal((await depositHttp(viaApi, wallet.id, executionId, { txHash: '0xtaken' })).status, 200);
    assert.equal((await depositHttp(viaApi, wallet.id, executionId, { txHash: '0xowed', amount: '12' })).status, 409);
    await eventually(async () => (await ledgerDo((l) => l.ofExecution(executionWorkflowId(wallet.id, executionId)))).length > 0, 30_000);
    await announceNow();
    type RowEvent = { id: string; event: { type: string; timestamp: string; data: { id: string; state: string; voidedAt?: string } } };
    const eventsOf = (type: string) =>
      (deliveries() as unknown as RowEvent[]).filter(
        (d) => d.event.type === type && (d.event.data as { executionId?: string }).executionId === executionId,
      );
    const [due] = await eventually(async () => eventsOf('refund.due').length > 0 && eventsOf('refund.due'), 45_000, 250);
    const id = due.event.data.id;
    // What the chain watcher's reportReorgs and reportSignals do to the row (the chain's side: test/integration/chain-abuse.test.ts).
    assert.deepEqual((await ledgerDo((l) => l.void([id], 'reorged'))).voided, [id]);
    await announceNow();
    const [voided] = await eventually(async () => eventsOf('refund.voided').length > 0 && eventsOf('refund.voided'), 45_000, 250);
    assert.equal(voided.id, `refund-voided:${id}:2`);
    assert.equal(voided.event.data.state, 'void');
    assert.equal(voided.event.timestamp, voided.event.data.voidedAt);
    assert.deepEqual(await ledgerDo((l) => l.restore([id])), [id]);
    await announceNow();
    const again = await eventually(async () => eventsOf('refund.due').length > 1 && eventsOf('refund.due'), 45_000, 250);
    assert.deepEqual(
      again.map((d) => [d.id, d.event.data.state]),
      [
        [`refund-due:${id}`, 'due'],
        [`refund-due:${id}:3`, 'due'],
      ],
    );
    assert.equal(eventsOf('refund.voided').length, 1);
  });

  it("when one of two endpoints is down, then the delivery is retried for it alone, and neither its URL nor the other's path is kept by Temporal (the failure names origins, the heartbeat digests)", async () => {
    if (!receiver || receiver.child.exitCode !== null) await startReceiver();
    const deadPort = await freePort();
    const secretPath = `/in/${randomUUID()}`;
    const own: Config = {
      ...config,
      temporal: { ...config.temporal, taskQueue: `webhooks-two-${randomUUID()}` },
      webhooks: [
        { url: `http://127.0.0.1:${port}/hooks${secretPath}`, secret },
        { url: `http://127.0.0.1:${deadPort}${secretPath}`, secret },
      ],
    };
    const ownWorker = await startWorker(own, stack.temporal.address);
    const ownApi = await startStackApi(stack, { config: own, logger: pino({ level: 'silent' }) });
    try {
      const wallet = newWallet();
      const executionId = `hook-two-${randomUUID()}`;
      assert.equal((await prepare({ ...stack, api: ownApi } as Stack, wallet, { executionId })).status, 201);
      const pending = await eventually(
        async () => {
          const d = await stack.client.workflow.getHandle(executionWorkflowId(wallet.id, executionId)).describe();
          const p = d.raw.pendingActivities?.find((a) => a.activityType?.name === 'deliverWebhook');
          return p && (p.attempt ?? 0) >= 2 && (p.heartbeatDetails?.payloads?.length ?? 0) > 0 && p;
        },
        30_000,
        250,
      );
      const kept = [
        String(pending.lastFailure?.message),
        ...(pending.heartbeatDetails?.payloads ?? []).map((payload) => Buffer.from(payload.data ?? []).toString('utf8')),
      ].join('\n');
      assert.match(kept, new RegExp(`webhook http://127\\.0\\.0\\.1:${deadPort}: `));
      assert.doesNotMatch(kept, new RegExp(secretPath));
      assert.doesNotMatch(kept, /\/hooks/);
      // The endpoint that is up got it once; the retries go to the other alone.
      const got = deliveries().filter((d) => d.event.data.executionId === executionId);
      assert.equal(new Set(got.map((d) => d.id)).size, 1);
      assert.equal(got.length, 1, 'not sent again to the endpoint that took it');
    } finally {
      await ownApi.close(1000);
      await ownWorker.shutdown();
    }
  });

  it('when a request is not signed with the secret, then the receiver refuses it (it really verifies)', async () => {
    if (!receiver || receiver.child.exitCode !== null) await startReceiver();
    const body = JSON.stringify({ type: 'execution.status_changed', timestamp: new Date().toISOString(), data: {} });
    const res = await fetch(`http://127.0.0.1:${port}/hooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'forged',
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': `v1,${randomBytes(32).toString('base64')}`,
      },
      body,
    });
    assert.equal(res.status, 401);
    assert.ok(!deliveries().some((d) => d.id === 'forged'));
  });
});
