import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { toChecksumAddress } from '../../domain/eoa';
import { ownerOf } from '../../domain/rendezvous';
import { confirmationMessage, ownerKey, type WhitelistChange } from '../../domain/whitelist-messages';
import { newWallet, sampleIntent, signedBody, type TestWallet } from '../support/executions';
import { ProcessStack } from '../support/process-stack';
import { nodeEntries } from '../support/whitelists';
import { errorTypes, figures, jsonLines, percentile, retry503, runLoad, runOpenLoop, shuffle, type LoadRequest } from './load-client';
import { testSettings } from '../support/settings';
import { executionWorkflowId } from '../../contracts/temporal';
import { workflowFacts } from '../support/workflow-facts';

// Under overload an answer whose outcome is unknown is 503 + Retry-After ("the same request may be
// retried safely"), never 500, and the retried request is then safe. The mix is measured
// closed-loop first (50 clients keep the service saturated: that throughput is the machine's
// ceiling for this mix), then the same mix arrives open-loop at twice that rate. The API and the
// worker run as their own processes, as deployed: in the test process the load generator would
// starve the worker's event loop, which a deployment never shares with its clients.

// All of its requests unless LOAD_SCALE says otherwise: at a quarter (the load test's short form)
// the mix no longer saturates this machine and no answer is a 503, so the path under test is gone.
const SCALE = testSettings().LOAD_SCALE ?? 1;
const SATURATE_EXECUTIONS = Math.round(150 * SCALE);
const OVERLOAD_EXECUTIONS = Math.round(300 * SCALE);
const CLIENTS = 50;
const SEED = testSettings().LOAD_SEED ?? 3_000;

interface Execution {
  wallet: TestWallet;
  executionId: string;
  intent: unknown;
  txHash: string;
  body: ReturnType<typeof signedBody>;
}

type Req = LoadRequest & { execution?: Execution; changes?: WhitelistChange[] };

describe('overload: the same mix at twice the rate that saturates this machine (open loop, loopback)', function () {
  this.timeout(600_000);
  let stack: ProcessStack;
  /** The API's JSON log lines (its stdout). */
  let apiLog: Array<Record<string, unknown>> = [];
  before(async function () {
    this.timeout(120_000);
    stack = await new ProcessStack().start();
    apiLog = jsonLines(stack.api!.child.stdout!);
  });
  after(async function () {
    this.timeout(60_000);
    await stack?.stop();
  });

  it('when requests arrive at twice the saturating rate, then every answer is the designed one or a 503 with Retry-After that a retry turns into it, none is 500, and nothing acknowledged is lost', async () => {
    const auth = { authorization: `Bearer ${stack.token}` };
    const nodes = stack.nodes.map((n) => n.url);
    const executions = (n: number): Execution[] =>
      Array.from({ length: n }, (_, i) => {
        const wallet = newWallet();
        const executionId = `overload-${i}-${randomUUID()}`;
        const intent = sampleIntent();
        return {
          wallet,
          executionId,
          intent,
          txHash: `0x${randomBytes(16).toString('hex')}`,
          body: signedBody(wallet, executionId, intent),
        };
      });
    const saturating = executions(SATURATE_EXECUTIONS);
    const overloading = executions(OVERLOAD_EXECUTIONS);

    // Setup, not measured: every prepare, 503s retried as a client would.
    const prepares = [...saturating, ...overloading].map<Req>((e) => ({
      kind: 'prepare',
      method: 'POST',
      path: `/api/v1/executions/${e.wallet.id}`,
      headers: auth,
      body: { executionId: e.executionId, intent: e.intent, ttlSeconds: 3600 },
    }));
    // Closed loop (50 clients): an open loop this fast opened hundreds of connections at once and
    // saw connections reset. A prepare whose 503 hid a start that took effect gets 409 on its retry.
    const setup = await runLoad(stack.apiUrl, prepares, CLIENTS);
    const setupRetried = await retry503(stack.apiUrl, setup.results);
    const setupWrong = setup.results.filter((r) => !(r.status === 201 || r.status === 200 || (r.status === 409 && setupRetried > 0)));
    assert.deepEqual(
      setupWrong.map((r) => `${r.status} ${JSON.stringify(r.body)}`),
      [],
      'every prepare done',
    );

    // Every execution read once by GET (a 503 retried as a client would).
    const readAll = async () => {
      const reads = await runLoad(
        stack.apiUrl,
        [...saturating, ...overloading].map<Req>((e) => ({
          kind: 'get',
          method: 'GET',
          path: `/api/v1/executions/${e.wallet.id}/${e.executionId}`,
          execution: e,
        })),
        CLIENTS,
      );
      await retry503(stack.apiUrl, reads.results);
      return reads.results;
    };

    // The API answers a prepare before its workflow's first task has run (decision 0009): wait for
    // those tasks (a query waits for the first one), or the closed loop's batches queue behind them,
    // time out (408) and hold its clients, and what it measures is not the machine's ceiling.
    const firstTasks = await readAll();
    assert.deepEqual(
      firstTasks.filter((r) => r.status !== 200).map((r) => `${r.status} ${JSON.stringify(r.body)}`),
      [],
      'every prepared execution answers',
    );

    const freshAdd = (): WhitelistChange => ({
      op_type: 'add_entry',
      kind: randomBytes(1)[0] % 2 ? 'developer' : 'user',
      entry: toChecksumAddress('0x' + randomBytes(20).toString('hex')),
    });
    const mix = (list: Execution[], seed: number): Req[] =>
      shuffle(
        [
          ...list.flatMap<Req>((e) => [
            {
              kind: 'deposit',
              method: 'POST',
              path: `/api/v1/executions/${e.wallet.id}/${e.executionId}/deposit`,
              headers: auth,
              body: { txHash: e.txHash },
              execution: e,
            },
            { kind: 'submit', method: 'POST', path: `/api/v1/executions/${e.wallet.id}/submit`, body: e.body, execution: e },
            { kind: 'get', method: 'GET', path: `/api/v1/executions/${e.wallet.id}/${e.executionId}`, execution: e },
          ]),
          // The default 5 s deadline: a batch late under overload is a designed 408 (applied later).
          ...Array.from({ length: Math.round(list.length / 3) }, (): Req => {
            const changes = Array.from({ length: 1 + (randomBytes(1)[0] % 5) }, freshAdd);
            return { kind: 'whitelist add', method: 'POST', path: '/chain/whitelists/', headers: auth, body: changes, changes };
          }),
        ],
        seed,
      );

    const logFrom = apiLog.length;
    const saturated = await runLoad(stack.apiUrl, mix(saturating, SEED), CLIENTS);
    const ceiling = saturated.results.length / saturated.seconds;
    // The closed-loop phase may meet its own 503s; a client retries them before moving on.
    const saturatedRetried = await retry503(stack.apiUrl, saturated.results);
    const rate = 2 * ceiling;
    const overloadRequests = mix(overloading, SEED + 1);
    const overloaded = await runOpenLoop(stack.apiUrl, overloadRequests, rate);
    const results = [...saturated.results, ...overloaded.results];
    const apiErrors = JSON.stringify(errorTypes(apiLog.slice(logFrom)));

    // Every answer, after its 503s were retried: the designed one.
    const designed = (r: (typeof results)[number]): boolean => {
      const req = r.request;
      return req.kind === 'deposit'
        ? r.status === 200 && r.body?.result?.deposit?.txHash === req.execution!.txHash
        : req.kind === 'submit'
          ? r.status === 200 && ['PREPARED', 'SIGNING'].includes(r.body?.result?.status)
          : req.kind === 'get'
            ? r.status === 200 && r.body?.result?.executionId === req.execution!.executionId
            : r.status === 200
              ? JSON.stringify(r.body) === JSON.stringify(req.changes!.map(confirmationMessage))
              : r.status === 408 && Array.isArray(r.body?.result);
    };
    const wrongResults = results.filter((r) => !designed(r));
    const wrong = wrongResults.map((r) => `${r.request.kind}: ${r.status} ${JSON.stringify(r.body ?? r.error).slice(0, 200)}`);

    // Final state: every execution SIGNING with its deposit and signature; every batch's entries on their owner.
    const reads = await readAll();
    const lostExecutions = reads.filter((read) => {
      const e = read.request.execution!;
      const record = read.body?.result;
      return !(
        read.status === 200 &&
        record.status === 'SIGNING' &&
        record.deposit?.txHash === e.txHash &&
        record.signedPayload?.signature === e.body.signature &&
        JSON.stringify(record.history.map((h: { status: string }) => h.status)) ===
          JSON.stringify(['PREPARED', 'OPERATION_PENDING', 'SIGNING'])
      );
    });
    const accepted = results.filter((r) => r.request.changes && (r.status === 200 || r.status === 408)).flatMap((r) => r.request.changes!);
    let missing: WhitelistChange[] = [];
    const settleStarted = Date.now();
    do {
      const held = new Map<string, Set<string>>();
      for (const node of nodes) {
        const lists = await Promise.all(
          (['developer', 'user'] as const).map(async (kind) => (await nodeEntries(node, kind)).map((e) => `${kind}:${e}`)),
        );
        held.set(node, new Set(lists.flat()));
      }
      missing = accepted.filter((c) => !held.get(ownerOf(ownerKey(c), nodes))!.has(`${c.kind}:${c.entry}`));
      if (missing.length === 0) break;
      await new Promise((r) => setTimeout(r, 1000));
    } while (Date.now() - settleStarted < 90_000);

    const unavailable = overloaded.results.reduce((n, r) => n + (r.unavailable ?? 0), 0);
    const ms = overloaded.results.map((r) => r.ms);
    console.log(
      [
        `overload: closed loop, ${CLIENTS} clients: ${saturated.results.length} requests in ${saturated.seconds.toFixed(1)} s = ${ceiling.toFixed(1)} req/s (the ceiling; ${saturatedRetried} retried after a 503)`,
        ...figures(saturated.results).map((l) => `    ${l}`),
        `  open loop at ${rate.toFixed(1)} req/s (2×): ${overloaded.results.length} requests, all answered after ${overloaded.seconds.toFixed(1)} s; 503s retried: ${unavailable} (on ${overloaded.results.filter((r) => r.unavailable).length} requests, at most ${Math.max(...overloaded.results.map((r) => r.unavailable ?? 0))} for one); first send to final answer p50 ${percentile(ms, 50).toFixed(0)} ms, p99 ${percentile(ms, 99).toFixed(0)} ms`,
        ...figures(overloaded.results).map((l) => `    ${l}`),
        `  answers not as designed after retries: ${wrong.length}; 500s: ${results.filter((r) => r.status === 500).length}; no answer: ${results.filter((r) => r.error).length}`,
        `  API errors logged (500s): ${apiErrors}`,
        `  lost = ${lostExecutions.length + missing.length} (executions ${lostExecutions.length}/${reads.length}, whitelist changes ${missing.length}/${accepted.length})`,
      ].join('\n'),
    );

    if (wrong.length > 0) {
      // Say what Temporal knows of the executions behind them (a workflow task failing or timing out, say).
      const executions = new Set(
        wrongResults.flatMap(({ request: { execution: e } }) => (e ? [executionWorkflowId(e.wallet.id, e.executionId)] : [])),
      );
      const facts = await Promise.all([...executions].slice(0, 5).map((id) => workflowFacts(stack.client, id)));
      assert.deepEqual(
        wrong.slice(0, 10),
        [],
        `${wrong.length} answers were not the designed ones; the API logged ${apiErrors}; ${facts.join(' | ')}`,
      );
    }
    assert.equal(results.filter((r) => r.status === 500).length, 0, 'no 500 under overload');
    assert.equal(
      lostExecutions.length,
      0,
      `executions not as acknowledged: ${lostExecutions
        .slice(0, 3)
        .map((r) => JSON.stringify(r.body).slice(0, 300))
        .join('\n')}`,
    );
    assert.deepEqual(missing.slice(0, 5), [], `${missing.length} accepted whitelist changes missing`);
  });
});
