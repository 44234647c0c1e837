import assert from 'node:assert/strict';
import { SharedProbe } from '../../lib/shared-probe';

describe('lib/shared-probe SharedProbe', () => {
  it('when a thousand callers ask at once and again within the age limit, then one probe ran and all got its answer', async () => {
    let probes = 0;
    let now = 0;
    let release!: (v: string) => void;
    const shared = new SharedProbe(
      () => {
        probes++;
        return new Promise<string>((resolve) => (release = resolve));
      },
      1000,
      () => now,
    );
    const answers = Array.from({ length: 1000 }, () => shared.get());
    release('up');
    assert.deepEqual(new Set(await Promise.all(answers)), new Set(['up']));
    now = 999;
    assert.equal(await shared.get(), 'up');
    assert.equal(probes, 1);
  });

  it('when the answer is older than the limit, then the next caller starts one new probe; a failed probe is not kept', async () => {
    let probes = 0;
    let now = 0;
    let fail = false;
    const shared = new SharedProbe(
      async () => {
        probes++;
        if (fail) throw new Error('down');
        return probes;
      },
      1000,
      () => now,
    );
    assert.equal(await shared.get(), 1);
    now = 1000;
    fail = true;
    await assert.rejects(shared.get(), /down/);
    fail = false;
    assert.equal(await shared.get(), 3, 'a failure is not cached: the next call probes again');
    assert.equal(probes, 3);
  });
});
