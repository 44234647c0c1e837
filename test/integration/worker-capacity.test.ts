import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { temporal } from '@temporalio/proto';
import type { ChildService } from '../../scripts/lib/child-service';
import { executionWorkflowId } from '../../contracts/temporal';
import { newWallet, sampleIntent, signedBody, type TestWallet } from '../support/executions';
import { request, type HttpAnswer } from '../support/http';
import { ProcessStack } from '../support/process-stack';

/** Each worker's WORKER_OPEN_RUNS, below its cache of 10. */
const BOUND = 4;
const WORKER_ENV = { WORKER_CACHED_WORKFLOWS: '10', WORKER_OPEN_RUNS: String(BOUND) };
const EventType = temporal.api.enums.v1.EventType;

/**
 * Capacity that grows with the workers (docs/decisions/0107), on real worker processes: each takes
 * no new run beyond its WORKER_OPEN_RUNS, new runs go to the workers with room, and the API admits
 * what the live workers announce (their sum less the largest), following them as they come and go.
 */
describe('capacity: open runs bounded per worker, admission summed over the live workers', function () {
  this.timeout(180_000);
  let stack: ProcessStack;
  /** An API that admits everything, to fill the workers past what the stack's API admits. */
  let unbounded: { api: ChildService; url: string };
  const workers: ChildService[] = [];
  const open: Array<{ wallet: TestWallet; executionId: string; intent: unknown }> = [];

  before(async () => {
    // CAPACITY_OPEN_RUNS empty: the stack's API admits what the workers announce.
    stack = await new ProcessStack({ env: { ...WORKER_ENV, CAPACITY_OPEN_RUNS: '' } }).start();
    workers.push(stack.worker!);
    unbounded = await stack.startExtraApi('unbounded-api', { CAPACITY_OPEN_RUNS: 'off' });
  });
  after(async () => {
    await ProcessStack.kill(unbounded?.api);
    await stack?.stop();
  });

  const prepare = async (base: string): Promise<HttpAnswer> => {
    const wallet = newWallet();
    const executionId = `wcap-${randomUUID()}`;
    const intent = sampleIntent();
    const answer = await request(base, 'POST', `/api/v1/executions/${wallet.id}`, { token: stack.token, json: { executionId, intent } });
    if (answer.status === 201) open.push({ wallet, executionId, intent });
    return answer;
  };

  /** The identity of the worker that ran the execution's last workflow task (its cache holds it), or undefined before its first. */
  const holderOf = async (entry: (typeof open)[number]): Promise<string | undefined> => {
    const history = await stack.client.workflow.getHandle(executionWorkflowId(entry.wallet.id, entry.executionId)).fetchHistory();
    const started = (history.events ?? []).filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
    return started.at(-1)?.workflowTaskStartedEventAttributes?.identity ?? undefined;
  };
  /** How many open executions each worker holds, once every one has had its first task (`except` excepted). */
  const heldByWorker = async (except?: (typeof open)[number]): Promise<Map<string, number>> => {
    const counts = new Map<string, number>();
    await until(async () => {
      counts.clear();
      for (const entry of open) {
        if (entry === except) continue;
        const holder = await holderOf(entry);
        if (holder === undefined) return false;
        counts.set(holder, (counts.get(holder) ?? 0) + 1);
      }
      return true;
    });
    return counts;
  };
  const identityOf = (worker: ChildService) => `${worker.child.pid}@${hostname()}`;

  /** Deposits to and signs `entry`: its execution closes and leaves its worker's cache. */
  const sign = async (entry: (typeof open)[number]) => {
    const path = `/api/v1/executions/${entry.wallet.id}/${entry.executionId}`;
    const deposit = await request(stack.apiUrl, 'POST', `${path}/deposit`, {
      token: stack.token,
      json: { txHash: `0x${randomBytes(32).toString('hex')}` },
    });
    assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
    const signed = await request(stack.apiUrl, 'POST', `/api/v1/executions/${entry.wallet.id}/submit`, {
      json: signedBody(entry.wallet, entry.executionId, entry.intent),
    });
    assert.equal(signed.status, 200, JSON.stringify(signed.body));
    open.splice(open.indexOf(entry), 1);
    await until(
      async () =>
        (await stack.client.workflow.getHandle(executionWorkflowId(entry.wallet.id, entry.executionId)).describe()).status.name ===
        'COMPLETED',
    );
  };

  /** The refusal's message, which names the live workers' bound as the API read it. */
  const refusal = async (): Promise<string> => {
    const answer = await prepare(stack.apiUrl);
    assert.equal(answer.status, 503, JSON.stringify(answer.body));
    assert.equal(answer.body.code, 'CAPACITY_FULL');
    return answer.body.error as string;
  };

  it('when one worker is live, then the API admits its bound and refuses the next prepare 503 CAPACITY_FULL', async () => {
    for (let i = 0; i < BOUND; i++) assert.equal((await prepare(stack.apiUrl)).status, 201);
    assert.match(await refusal(), /take 4 open runs \(1 workers\)/);
  });

  it('when a second and a third worker announce themselves, then the API admits their sum less the largest, and no worker holds more than its bound', async () => {
    workers.push(await stack.startExtraWorker());
    // Two workers of 4: the sum less the largest is still 4.
    await until(async () => /\(2 workers\)/.test(await refusal()));
    assert.match(await refusal(), /take 4 open runs/);
    workers.push(await stack.startExtraWorker());
    await until(async () => (await prepare(stack.apiUrl)).status === 201);
    while (open.length < 2 * BOUND) assert.equal((await prepare(stack.apiUrl)).status, 201);
    assert.match(await refusal(), /take 8 open runs \(3 workers\)/);
    const held = await heldByWorker();
    for (const [holder, count] of held) assert.ok(count <= BOUND, `${holder} holds ${count} open runs, its bound is ${BOUND}`);
  });

  it('when every worker holds its bound, then a new run waits on the server for room, and goes to the worker an execution left', async () => {
    // Past the stack API's admission: the unbounded API fills the three workers to 12.
    while (open.length < 3 * BOUND) assert.equal((await prepare(unbounded.url)).status, 201);
    const held = await heldByWorker();
    assert.deepEqual([...held.values()], [BOUND, BOUND, BOUND], `each worker holds its bound: ${JSON.stringify([...held])}`);
    assert.equal((await prepare(unbounded.url)).status, 201);
    const waiting = open.at(-1)!;
    // No worker takes its first task while each holds its bound.
    await new Promise((r) => setTimeout(r, 3_000));
    assert.equal(await holderOf(waiting), undefined, 'a worker took a run past its bound');
    const leaving = open.find((e) => e !== waiting)!;
    const itsWorker = await holderOf(leaving);
    await sign(leaving);
    await until(async () => (await holderOf(waiting)) !== undefined);
    assert.equal(await holderOf(waiting), itsWorker, 'the new run went to the worker with room');
    const after = await heldByWorker();
    for (const [holder, count] of after) assert.ok(count <= BOUND, `${holder} holds ${count}`);
  });

  it('when a worker dies without a word, then the API counts it until its announcement expires, then admits the smaller sum', async () => {
    const dead = workers.pop()!;
    assert.ok([...(await heldByWorker()).keys()].includes(identityOf(dead)), 'the killed worker held runs');
    await ProcessStack.kill(dead);
    assert.match(await refusal(), /\(3 workers\)/, 'its announcement still counts right after the kill');
    await until(async () => /take 4 open runs \(2 workers\)/.test(await refusal()), 30_000);
  });
});

/** Polls `check` every 250 ms until it holds, for at most `ms`. */
async function until(check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
