// Named zz- so that mocha (which sorts spec files) runs it last: it replays what the other
// integration tests left in the dev server.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON, type History } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { projectRoot } from '../../config/config';
import { getStack, type Stack } from '../support/stack';

const FIXTURES = path.join(projectRoot, 'test', 'fixtures', 'histories');
const workflowsPath = require.resolve('../../workflows');

describe('replay: recorded workflow histories replay without nondeterminism', () => {
  let stack: Stack;
  before(async function () {
    this.timeout(120_000);
    stack = await getStack();
  });

  it('when every history this test run produced is replayed with the current workflow code, then none fails', async function () {
    this.timeout(120_000);
    const histories = stack.client.workflow.list({ query: `TaskQueue='${stack.config.temporal.taskQueue}'` }).intoHistories();
    const seen = new Map<string, number>();
    const failures: string[] = [];
    // RECORD_HISTORIES=<tag> (e.g. v2) writes fixtures named <tag>-<type>-<events>.json.
    const tag = process.env.RECORD_HISTORIES;
    const record = Boolean(tag);
    const recorded = new Set<string>();
    async function* tee() {
      for await (const h of histories) {
        if (record) {
          // One fixture per workflow type and final history length: a cheap stand-in for "per path taken".
          const history = h.history as History;
          const type = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? 'unknown';
          const key = `${tag}-${type}-${history.events?.length}`;
          if (!recorded.has(key)) {
            recorded.add(key);
            mkdirSync(FIXTURES, { recursive: true });
            writeFileSync(path.join(FIXTURES, `${key}.json`), JSON.stringify({ workflowId: h.workflowId, history: JSON.parse(historyToJSON(history)) }));
          }
        }
        yield h;
      }
    }
    for await (const result of Worker.runReplayHistories({ workflowsPath, replayName: 'live-histories' }, tee())) {
      const type = result.workflowId.split(':')[0];
      seen.set(type, (seen.get(type) ?? 0) + 1);
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    assert.deepEqual(failures, []);
    assert.ok((seen.get('exec') ?? 0) > 10, `replayed execution histories: ${JSON.stringify([...seen])}`);
    assert.ok((seen.get('whitelist-batch') ?? 0) > 5, `replayed whitelist batch histories: ${JSON.stringify([...seen])}`);
  });

  it('when the histories committed under test/fixtures/histories are replayed, then none fails (older histories stay replayable)', async function () {
    this.timeout(60_000);
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));
    assert.ok(files.length >= 4, `expected committed fixtures, found ${files.length}`);
    async function* fixtures() {
      for (const file of files) {
        const { workflowId, history } = JSON.parse(readFileSync(path.join(FIXTURES, file), 'utf8'));
        yield { workflowId, history };
      }
    }
    const failures: string[] = [];
    let count = 0;
    for await (const result of Worker.runReplayHistories({ workflowsPath, replayName: 'fixture-histories' }, fixtures())) {
      count++;
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    assert.equal(count, files.length);
    assert.deepEqual(failures, []);
  });
});
