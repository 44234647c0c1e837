import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { toChecksumAddress } from '../../domain/eoa';
import { ownerOf } from '../../domain/rendezvous';
import { confirmationMessage, ownerKey, type WhitelistChange } from '../../domain/whitelist-messages';
import { executionWorkflowId } from '../../contracts/temporal';
import { ClusterStack } from '../support/cluster-stack';
import { newWallet, sampleIntent, signedBody, type TestWallet } from '../support/executions';
import { TEST_TEMPORAL } from '../support/temporal-target';
import { nodeEntries } from '../support/whitelists';
import { FailoverClient, type Outcome } from './failover-client';
import { testSettings } from '../support/settings';

// npm run test:cluster (TEST_TEMPORAL=cluster): the production topology under load through both
// APIs while, one after the other, a worker is SIGKILLed, an API is SIGKILLed (its clients fail
// over to the other), the Temporal server process is restarted and PostgreSQL is restarted with a
// fast shutdown. Then every acknowledged signature and whitelist change must be there, nothing
// unacknowledged may be, every execution has its right status and history, every batch converged.

const CLIENTS = testSettings().CLUSTER_FAULT_CLIENTS ?? 6;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface ExecutionOp {
  wallet: TestWallet;
  executionId: string;
  intent: unknown;
  body: ReturnType<typeof signedBody>;
  prepare?: Outcome;
  deposit?: Outcome;
  submit?: Outcome;
}
/**
 * A prepare answered as designed: 201, or, after a retry whose earlier attempt got no answer but
 * did create the execution, 200 with `Idempotent-Replayed: true` and the record (decision 0054:
 * the same id, intent and ttl again is a replay, not a conflict).
 */
const prepared = (o: Outcome) =>
  o.status === 201 || (o.status === 200 && o.replayed === true && o.attempts.length > 1 && o.body?.result?.status === 'PREPARED');

interface BatchOp {
  changes: WhitelistChange[];
  outcome?: Outcome;
}

(TEST_TEMPORAL === 'cluster' ? describe : describe.skip)(
  'cluster faults: load through two APIs while a worker, an API, the Temporal server and PostgreSQL fail',
  function () {
    this.timeout(900_000);
    let stack: ClusterStack;
    before(async function () {
      this.timeout(300_000);
      stack = await new ClusterStack().start();
    });
    after(async () => {
      await stack?.stop();
    });

    it('when the faults hit one after the other under load, then clients fail over, and lost = 0: every acknowledged signature and change is there, nothing unacknowledged is, every batch converged', async () => {
      const client = new FailoverClient(stack.apiUrls, { attemptTimeoutMs: 30_000, giveUpMs: 180_000 });
      const executions: ExecutionOp[] = [];
      const batches: BatchOp[] = [];
      const t0 = Date.now();
      const faults: Array<{ name: string; at: number; tookMs?: number }> = [{ name: 'none (warm load)', at: 0 }];
      let loading = true;

      const executionFlow = async () => {
        const wallet = newWallet();
        const executionId = `cf-${randomUUID()}`;
        const intent = sampleIntent();
        const op: ExecutionOp = { wallet, executionId, intent, body: signedBody(wallet, executionId, intent) };
        executions.push(op);
        op.prepare = await client.send('POST', `/api/v1/executions/${wallet.id}`, {
          json: { executionId, intent, ttlSeconds: 3600 },
          token: stack.token,
        });
        if (!prepared(op.prepare)) return;
        op.deposit = await client.send('POST', `/api/v1/executions/${wallet.id}/${executionId}/deposit`, {
          json: { txHash: `0x${executionId}` },
          token: stack.token,
        });
        if (op.deposit.status !== 200) return;
        op.submit = await client.send('POST', `/api/v1/executions/${wallet.id}/submit`, { json: op.body });
      };
      const batchFlow = async () => {
        const changes = Array.from({ length: 1 + (randomBytes(1)[0] % 3) }, (): WhitelistChange => ({
          op_type: 'add_entry',
          kind: randomBytes(1)[0] % 2 ? 'developer' : 'user',
          entry: toChecksumAddress('0x' + randomBytes(20).toString('hex')),
        }));
        const op: BatchOp = { changes };
        batches.push(op);
        op.outcome = await client.send('POST', '/chain/whitelists/', { json: changes, token: stack.token, headers: { timeout: '10000' } });
      };
      const load = Promise.all(
        Array.from({ length: CLIENTS }, async (_, c) => {
          for (let i = 0; loading; i++) await ((i + c) % 2 === 0 ? executionFlow() : batchFlow());
        }),
      );

      const fault = async (name: string, action: () => Promise<void>) => {
        const entry: { name: string; at: number; tookMs?: number } = { name, at: Date.now() - t0 };
        faults.push(entry);
        const started = Date.now();
        await action();
        entry.tookMs = Date.now() - started;
      };
      await sleep(8_000);
      await fault('SIGKILL worker 1 (restarted after 5 s)', async () => {
        await ClusterStack.kill(stack.workers[0]);
        await sleep(5_000);
        await stack.startWorker(0);
      });
      await sleep(5_000);
      await fault('SIGKILL API 1 (restarted after 5 s)', async () => {
        await ClusterStack.kill(stack.apis[0]);
        await sleep(5_000);
        await stack.startApi(0);
      });
      await sleep(5_000);
      await fault('restart the Temporal server (SIGTERM, start)', async () => {
        await stack.cluster.stopServer(15_000);
        await stack.cluster.startServer();
      });
      await sleep(8_000);
      await fault('restart PostgreSQL (fast shutdown, start)', () => stack.cluster.postgres.restart());
      await sleep(10_000);
      faults.push({ name: 'after the faults', at: Date.now() - t0 });
      loading = false;
      await load;
      const loadSeconds = (Date.now() - t0) / 1000;

      // What clients saw, per window between faults (by when each logical request started).
      const outcomes = [...executions.flatMap((e) => [e.prepare, e.deposit, e.submit]), ...batches.map((b) => b.outcome)].filter(
        (o): o is Outcome => !!o,
      );
      const lines = [
        `cluster faults: ${outcomes.length} requests (${executions.length} executions, ${batches.length} batches) from ${CLIENTS} clients through 2 APIs in ${loadSeconds.toFixed(0)} s`,
      ];
      for (let w = 0; w < faults.length - 1; w++) {
        const from = t0 + faults[w].at;
        const to = t0 + faults[w + 1].at;
        const inWindow = outcomes.filter((o) => o.startedAt >= from && o.startedAt < to);
        const seen = new Map<string, number>();
        for (const o of inWindow)
          for (const a of o.attempts)
            seen.set(
              a.status === 'error' ? `no answer (${a.error})` : String(a.status),
              (seen.get(a.status === 'error' ? `no answer (${a.error})` : String(a.status)) ?? 0) + 1,
            );
        const longest = Math.max(0, ...inWindow.map((o) => o.ms));
        const retried = inWindow.filter((o) => o.attempts.length > 1).length;
        lines.push(
          `  ${faults[w].name}${faults[w].tookMs !== undefined ? ` [fault took ${(faults[w].tookMs! / 1000).toFixed(1)} s]` : ''}: ${inWindow.length} requests, attempts {${[
            ...seen,
          ]
            .sort()
            .map(([s, n]) => `${s}: ${n}`)
            .join(
              ', ',
            )}}, ${retried} retried (failed over), longest stall ${(longest / 1000).toFixed(1)} s, gave up ${inWindow.filter((o) => o.gaveUp).length}`,
        );
      }

      // Every final answer is a designed one, and nobody gave up.
      const wrong: string[] = [];
      for (const e of executions) {
        if (e.prepare && !prepared(e.prepare))
          wrong.push(`prepare ${e.executionId}: ${e.prepare.status} ${JSON.stringify(e.prepare.body)}`);
        if (e.deposit && e.deposit.status !== 200)
          wrong.push(`deposit ${e.executionId}: ${e.deposit.status} ${JSON.stringify(e.deposit.body)}`);
        if (e.submit && !(e.submit.status === 200 && e.submit.body?.result?.status === 'SIGNING'))
          wrong.push(`submit ${e.executionId}: ${e.submit.status} ${JSON.stringify(e.submit.body)}`);
      }
      for (const b of batches)
        if (b.outcome && ![200, 408].includes(b.outcome.status)) wrong.push(`batch: ${b.outcome.status} ${JSON.stringify(b.outcome.body)}`);

      // Executions: each acknowledged step is in its record; the history is exact.
      const acknowledged = executions.filter((e) => e.prepare && prepared(e.prepare));
      const notAsAcknowledged: string[] = [];
      for (const e of acknowledged) {
        const expected =
          e.submit?.status === 200
            ? ['PREPARED', 'OPERATION_PENDING', 'SIGNING']
            : e.deposit?.status === 200
              ? ['PREPARED', 'OPERATION_PENDING']
              : ['PREPARED'];
        const read = await client.send('GET', `/api/v1/executions/${e.wallet.id}/${e.executionId}`);
        const record = read.body?.result;
        const ok =
          read.status === 200 &&
          JSON.stringify(record.history.map((h: { status: string }) => h.status)) === JSON.stringify(expected) &&
          (e.submit?.status !== 200 || record.signedPayload?.signature === e.body.signature) &&
          (e.deposit?.status !== 200 || record.deposit?.txHash === `0x${e.executionId}`);
        if (!ok)
          notAsAcknowledged.push(
            `${e.executionId}: expected ${expected.join('→')}, got ${read.status} ${JSON.stringify(record?.history ?? read.body)}`,
          );
      }
      // Nothing unacknowledged: the execution workflows on this task queue are exactly the acknowledged ones.
      const inTemporal = new Set<string>();
      for await (const wf of stack.client.workflow.list({
        query: `TaskQueue = '${stack.taskQueue}' AND WorkflowType = 'executionWorkflow'`,
      }))
        inTemporal.add(wf.workflowId);
      const ackedIds = new Set(acknowledged.map((e) => executionWorkflowId(e.wallet.id, e.executionId)));
      const unacknowledgedExecutions = [...inTemporal].filter((id) => !ackedIds.has(id));
      const missingExecutions = [...ackedIds].filter((id) => !inTemporal.has(id));

      // Whitelists: the nodes hold exactly the acknowledged adds, each on its owner; wait for 408s to converge.
      const nodes = stack.nodes.map((n) => n.url);
      const expectedEntries = new Set<string>();
      for (const b of batches)
        if (b.outcome && [200, 408].includes(b.outcome.status))
          for (const c of b.changes) expectedEntries.add(`${c.kind}:${c.entry.toLowerCase()}`);
      const confirmedToClient = new Set<string>();
      for (const b of batches) {
        const confirmations: string[] =
          b.outcome?.status === 200 ? b.outcome.body : b.outcome?.status === 408 ? (b.outcome.body?.result ?? []) : [];
        for (const c of b.changes)
          if (confirmations.includes(confirmationMessage(c))) confirmedToClient.add(`${c.kind}:${c.entry.toLowerCase()}`);
      }
      let missingEntries: string[] = [];
      let extraEntries: string[] = [];
      const settleStarted = Date.now();
      do {
        const held = new Map<string, Set<string>>();
        for (const node of nodes)
          held.set(
            node,
            new Set(
              (
                await Promise.all(
                  (['developer', 'user'] as const).map(async (k) => (await nodeEntries(node, k)).map((e) => `${k}:${e.toLowerCase()}`)),
                )
              ).flat(),
            ),
          );
        const owner = (key: string) =>
          ownerOf(ownerKey({ kind: key.split(':')[0] as WhitelistChange['kind'], entry: key.split(':')[1] }), nodes);
        missingEntries = [...expectedEntries].filter((key) => !held.get(owner(key))!.has(key));
        extraEntries = nodes.flatMap((n) => [...held.get(n)!].filter((key) => !expectedEntries.has(key) || owner(key) !== n));
        if (missingEntries.length === 0 && extraEntries.length === 0) break;
        await sleep(1000);
      } while (Date.now() - settleStarted < 120_000);
      let running = 0;
      for await (const _ of stack.client.workflow.list({
        query: `TaskQueue = '${stack.taskQueue}' AND WorkflowType = 'whitelistBatchWorkflow' AND ExecutionStatus = 'Running'`,
      }))
        running++;

      const lost = notAsAcknowledged.length + missingExecutions.length + missingEntries.filter((k) => confirmedToClient.has(k)).length;
      lines.push(
        `  executions: ${acknowledged.length} acknowledged, ${acknowledged.filter((e) => e.submit?.status === 200).length} signed; ${notAsAcknowledged.length} not as acknowledged; in Temporal ${inTemporal.size} (unacknowledged ${unacknowledgedExecutions.length}, missing ${missingExecutions.length})`,
        `  whitelists: ${expectedEntries.size} accepted entries (${confirmedToClient.size} confirmed to the client), missing ${missingEntries.length}, unacknowledged or misplaced ${extraEntries.length}, settled after ${((Date.now() - settleStarted) / 1000).toFixed(1)} s; batch workflows still running ${running}`,
        `  undesigned final answers: ${wrong.length}; lost = ${lost}`,
      );
      console.log(lines.join('\n'));
      for (const line of [...wrong, ...notAsAcknowledged].slice(0, 5)) console.log(`    ${line}`);

      assert.deepEqual(wrong.slice(0, 5), [], `${wrong.length} undesigned final answers`);
      assert.equal(outcomes.filter((o) => o.gaveUp).length, 0, 'requests that never got an answer');
      assert.deepEqual(notAsAcknowledged.slice(0, 5), []);
      assert.deepEqual(missingExecutions, []);
      assert.deepEqual(unacknowledgedExecutions, []);
      assert.deepEqual(missingEntries.slice(0, 5), []);
      assert.deepEqual(extraEntries.slice(0, 5), []);
      assert.equal(running, 0, 'batch workflows still running');
      assert.equal(lost, 0);
      assert.ok(
        executions.length >= 20 && batches.length >= 20,
        `enough load (${executions.length} executions, ${batches.length} batches)`,
      );
    });
  },
);
