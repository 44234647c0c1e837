import assert from 'node:assert/strict';
import path from 'node:path';
import { projectRoot } from '../../config/config';
import { planBuiltSuite, planSuite, startsOwnStack, testFiles } from '../support/suite-plan';

describe('unit: the suite plan (npm test runs every test file once, in two lanes, then the load tests alone)', () => {
  const distTest = path.join(projectRoot, 'dist', 'test');
  const rel = (f: string) => path.relative(distTest, f);

  it('when the built suite is planned, then every test file mocha would run is in exactly one job, and no job holds anything else', () => {
    const plan = planBuiltSuite(distTest);
    const planned = [...plan.parallel.flat(), ...plan.alone].sort();
    assert.deepEqual(planned, testFiles(distTest));
    assert.equal(new Set(planned).size, planned.length);
    assert.ok(planned.length > 100, `${planned.length} files`);
  });

  it('when the built suite is planned, then the load tests run alone, a file with its own process stack is a job of its own, and the shared-stack files are one job', () => {
    const plan = planBuiltSuite(distTest);
    assert.deepEqual(plan.alone.map(rel).sort(), testFiles(path.join(distTest, 'load')).map(rel).sort());
    const single = plan.parallel.filter((j) => j.length === 1).map((j) => rel(j[0]));
    for (const own of ['integration/refunds-paid.test.js', 'faults/faults.test.js', 'integration/token-refunds.test.js'])
      assert.ok(single.includes(own), `${own} runs on its own`);
    const shared = plan.parallel.filter((j) => j.length > 1);
    assert.equal(shared.length, 1);
    for (const file of ['integration/webhooks.test.js', 'unit/suite-plan.test.js']) assert.ok(shared[0].map(rel).includes(file), file);
  });

  it('when a compiled file imports a process stack as a value, then it starts its own; a type-only import leaves no trace', () => {
    // Written in two parts, so that this file's own code does not look like a file that starts a stack.
    assert.equal(startsOwnStack('stack = new process_stack_1.' + 'ProcessStack();'), true);
    assert.equal(startsOwnStack('stack = await (0, deposit_helpers_1.' + 'startFollowingStack)(chain, CHAIN, 3, {});'), true);
    assert.equal(startsOwnStack('import type { ProcessStack } from "../support/process-stack"; // ProcessStack'), false);
    assert.equal(startsOwnStack('const stack_1 = require("../support/stack");\nstack = await (0, stack_1.getStack)();'), false);
  });

  it('when jobs are weighed, then the heaviest start first', () => {
    const weights: Record<string, number> = { a: 1, b: 5, c: 3, d: 1 };
    const plan = planSuite(
      ['a', 'b', 'c', 'd'],
      (f) => (f === 'b' || f === 'c' ? 'new x.' + 'ProcessStack(' : ''),
      (f) => weights[f],
    );
    assert.deepEqual(plan.parallel, [['b'], ['c'], ['a', 'd']]);
    assert.deepEqual(plan.alone, []);
  });
});
