import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Address, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { chainWatcherWorkflowId, refundAddressWorkflowId, serviceTaskQueues } from '../../contracts/temporal';
import { startFollowingStack } from '../../scripts/lib/deposit-helpers';
import { TestChain } from '../support/chain';
import { depositHelpers } from '../support/deposit-helpers';
import { eventually } from '../support/executions';
import { OtlpReceiver } from '../support/otlp-receiver';
import { freePort } from '../support/ports';
import { ProcessStack } from '../support/process-stack';
import { refundReads } from '../support/refund-reads';
import { startKeyedNode } from '../support/rpc-relay';

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 2;
/** The chain node's API key, in its URL's path as hosted nodes give it. */
const NODE_KEY = 'SECRETKEY';
/** A webhook receiver's secret, in its URL's path. */
const HOOK_KEY = `HOOKPATHSECRET${randomBytes(4).toString('hex')}`;

/** Text of every payload and failure in a Temporal answer: bytes (payloads' data) read as UTF-8. */
const temporalText = (value: unknown) =>
  JSON.stringify(value, (_, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : v));

/**
 * Secrets that reach the service in its settings and its requests (a chain node's URL with its key
 * in the path, a webhook receiver's URL with a secret path, an API token) appear in nothing it
 * writes down: a real worker and API whose node fails under them, a webhook receiver that refuses
 * its connections, tracing on; then every line the two processes wrote, every span they exported
 * and the history and pending failures of every workflow of the stack are searched for them.
 */
describe('secrets stay out of logs, spans and Temporal: a failing keyed chain node, a refused webhook receiver', function () {
  this.timeout(240_000);
  let chain: TestChain;
  let node: Awaited<ReturnType<typeof startKeyedNode>>;
  let otlp: OtlpReceiver;
  let stack: ProcessStack;
  const lines: string[] = [];

  before(async function () {
    this.timeout(180_000);
    chain = await TestChain.start();
    node = await startKeyedNode(chain.url, NODE_KEY);
    otlp = await new OtlpReceiver().start();
    // Nothing listens there: every delivery is refused.
    const hookUrl = `http://127.0.0.1:${await freePort()}/hooks/${HOOK_KEY}?key=${HOOK_KEY}`;
    stack = await startFollowingStack(
      chain,
      CHAIN,
      CONFIRMATIONS,
      {
        CHAIN_RPC_URL: node.url,
        CHAIN_REORG_WINDOW: '6',
        REFUND_PAYMENTS: 'on',
        WEBHOOK_URLS: hookUrl,
        WEBHOOK_SECRETS: `whsec_${randomBytes(24).toString('base64')}`,
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '200',
        LOG_LEVEL: 'debug',
      },
      (options) => new ProcessStack({ ...options, onLine: (name, line) => lines.push(`[${name}] ${line}`) }),
    );
  });
  after(async () => {
    await stack?.stop();
    node?.close();
    await otlp?.stop();
    await chain?.stop();
  });

  const deposits = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );
  const { rowOf, mineUntil } = refundReads(
    () => stack,
    () => chain,
  );

  /** Every workflow of the stack's task queues: its history and its description (pending activities' last failures). */
  async function temporalRecords(): Promise<string[]> {
    const out: string[] = [];
    const runs = stack.client.workflow.list({
      query: serviceTaskQueues(stack.taskQueue)
        .map((q) => `TaskQueue = '${q}'`)
        .join(' OR '),
    });
    for await (const run of runs) {
      const handle = stack.client.workflow.getHandle(run.workflowId, run.runId);
      out.push(`${run.workflowId} history ${temporalText(await handle.fetchHistory())}`);
      out.push(`${run.workflowId} described ${temporalText((await handle.describe()).raw)}`);
    }
    return out;
  }

  /** The last failures of `workflowId`'s pending activities, as last looked at by pendingFailure. */
  const seen = new Map<string, string[]>();

  /** The last failure of a pending activity of `workflowId` that names the node (by its origin at least), if there is one now. */
  async function pendingFailure(workflowId: string): Promise<string | undefined> {
    const described = await stack.client.workflow
      .getHandle(workflowId)
      .describe()
      .catch(() => undefined);
    const failures = (described?.raw.pendingActivities ?? []).map((a) => a.lastFailure?.message ?? '(no failure yet)');
    seen.set(workflowId, failures);
    return failures.find((m) => m.includes(new URL(node.url).host));
  }

  /** Why `wait` for a failure of `workflowId` ended without one. */
  const noFailure = (workflowId: string) => (err: Error) => {
    throw new Error(
      `${workflowId}: no pending failure names the node (${err.message}); last failures: ${JSON.stringify(seen.get(workflowId))}`,
    );
  };

  it('when the node fails under the watcher and a refund, and a webhook cannot be delivered, then the node key, the webhook secret and the API token appear in no log line, span or workflow history, and every line the worker and the API wrote is pino JSON (time, pid, level)', async () => {
    // An execution takes a deposit (its status change is a webhook the receiver refuses), then a
    // second transfer to its address is a row the refunder must pay: the node fails from then on.
    const e = await deposits.prepare({ minAmount: '1000', idPrefix: 'secrets' });
    await chain.send(e.address, 1000n);
    await chain.mine(CONFIRMATIONS);
    await deposits.operationPending(e, 30_000);
    const payerKey = generatePrivateKey();
    const payer = privateKeyToAccount(payerKey).address as Address;
    await chain.send(payer, 10n ** 18n);
    await chain.mine(1);
    const tx: Hex = await chain.sendRaw(await chain.signedTransfer(payerKey, e.address, 10n ** 17n));
    await chain.mine(CONFIRMATIONS);
    await rowOf(e, tx);
    // The refund is signed and sent: the node fails it. Then it fails everything: the watcher's rounds.
    node.fail((method) => method === 'eth_sendRawTransaction');
    const refund = refundAddressWorkflowId(CHAIN, e.address);
    const refundFailure = await mineUntil(() => pendingFailure(refund)).catch(noFailure(refund));
    node.fail(() => true);
    const watcher = chainWatcherWorkflowId(CHAIN);
    const watcherFailure = await eventually(() => pendingFailure(watcher), 60_000).catch(noFailure(watcher));
    await eventually(async () => lines.some((l) => l.includes('[fault-worker]') && l.includes(new URL(node.url).host)), 30_000);
    // The API asked for its traces: one request's spans have arrived.
    await deposits.record(e);
    await eventually(async () => otlp.spans.some((s) => s.resource['service.name'] === 'intent-service-api'), 30_000);
    const records = await temporalRecords();
    await stack.stop();

    const searched = { logLines: lines, spans: otlp.exports, temporal: records };
    for (const [what, texts] of Object.entries(searched)) assert.ok(texts.length > 0, `nothing to search in ${what}`);
    // Every place a secret was found, each named by the secret's first characters and the place.
    const found = [NODE_KEY, HOOK_KEY, stack.token].flatMap((secret) =>
      Object.entries(searched).flatMap(([what, texts]) =>
        texts.filter((t) => t.includes(secret)).map((t) => `${secret.slice(0, 9)}… in ${what}: ${t.slice(0, 300)}`),
      ),
    );
    assert.deepEqual(found, []);
    // One format, whoever wrote the line (the service, the SDK, the core), at LOG_LEVEL=debug with everything failing.
    assert.ok(stack.log.lines > 0, 'the worker and the API wrote lines');
    assert.deepEqual(stack.log.notPino, []);
    // What stays is enough to find the node: its origin.
    assert.ok(watcherFailure.includes(new URL(node.url).origin), watcherFailure);
    assert.ok(refundFailure.includes(new URL(node.url).origin), refundFailure);
  });
});
