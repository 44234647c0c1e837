import assert from 'node:assert/strict';
import { changeState, type NodeStatus } from '../../domain/batch-status';

describe("unit: the state of a batch's change (domain/batch-status.ts)", () => {
  const table: Array<[NodeStatus, number | undefined, boolean, string]> = [
    ['applied', undefined, true, 'applied'],
    ['pending', undefined, true, 'pending'],
    ['applied', 200, false, 'applied'],
    ['pending', 408, true, 'pending'],
    ['failed', 408, true, 'pending'],
    ['applied', 408, false, 'applied'],
    ['failed', 500, true, 'pending'],
    ['reverted', 500, false, 'reverted'],
    ['not-applied', 500, false, 'not-applied'],
    ['pending', 403, false, 'not-applied'],
    ['pending', 408, false, 'unknown'],
    ['failed', 500, false, 'unknown'],
  ];
  for (const [progress, status, running, expected] of table) {
    it(`when the node is ${progress}, the answer ${status ?? 'not known yet'} and the workflow ${running ? 'running' : 'closed'}, then the change is ${expected}`, () => {
      assert.equal(changeState([progress], status, running), expected);
    });
  }

  const replicated: Array<[NodeStatus[], number | undefined, boolean, string]> = [
    [['applied', 'applied', 'pending'], 200, true, 'applied'],
    [['applied', 'failed', 'pending'], 408, true, 'pending'],
    [['applied', 'failed', 'pending'], 408, false, 'unknown'],
    [['reverted', 'not-applied', 'not-applied'], 500, false, 'reverted'],
    [['not-applied', 'not-applied', 'not-applied'], 500, false, 'not-applied'],
  ];
  for (const [progress, status, running, expected] of replicated) {
    it(`when its three replicas' nodes are ${progress.join(', ')}, the answer ${status} and the workflow ${running ? 'running' : 'closed'}, then the change is ${expected} (a majority decides)`, () => {
      assert.equal(changeState(progress, status, running), expected);
    });
  }
});
