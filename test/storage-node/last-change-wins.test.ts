import assert from 'node:assert/strict';
import fs from 'node:fs';
import fc from 'fast-check';
import { toChecksumAddress } from '../../domain/eoa';
import { scheduleArbitrary, sequentialOutcome } from '../support/batch-schedules';
import { apply, kill9, killAll, list, startNode, tempDataDir } from './node-process';

const ENTRIES = [0xa1, 0xb2, 0xc3].map((n) => toChecksumAddress(`0x${n.toString(16).padStart(40, '0')}`));

// The same promise as the pure property (test/unit/entry-order.test.ts), on a real node process
// over signed HTTP: deliveries in any order, some at once, repeated, reverts before or after their
// batch, and the node killed (SIGKILL) and restarted in between.
describe('storage node process: the last accepted change wins, whatever the arrival order (fast-check, real processes)', function () {
  this.timeout(180_000);
  afterEach(() => killAll());

  it('when batches, their retries and reverts reach a node in any interleaving, across SIGKILL restarts, then its whitelists equal the accepted batches applied in their order', async () => {
    await fc.assert(
      fc.asyncProperty(
        scheduleArbitrary(ENTRIES, 6),
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 20 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 20 }),
        async (schedule, groupSizes, restarts) => {
          const dir = tempDataDir();
          let node = await startNode(dir);
          try {
            let at = 0;
            for (let g = 0; at < schedule.deliveries.length; g++) {
              // A group is sent at once: its arrival order is the network's.
              const group = schedule.deliveries.slice(at, at + groupSizes[g % groupSizes.length]);
              at += group.length;
              const answers = await Promise.all(
                group.map(({ batch, revert }) => {
                  const { batchId, position, changes } = schedule.batches[batch];
                  return apply(node, { batchId, position, changes, tokenId: 'prop', ...(revert ? { revert: true } : {}) });
                }),
              );
              for (const a of answers) assert.equal(a.status, 200, a.text);
              if (restarts[g % restarts.length] && g % 3 === 2) {
                await kill9(node);
                node = await startNode(dir);
              }
            }
            const expected = sequentialOutcome(schedule.batches);
            const sorted = async (kind: string) => (await list(node, kind)).sort();
            assert.deepEqual({ developer: await sorted('developer'), user: await sorted('user') }, expected);
          } finally {
            await killAll();
            fs.rmSync(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
