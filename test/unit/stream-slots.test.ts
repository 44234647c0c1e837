import assert from 'node:assert/strict';
import { StreamSlots, type SlotGrant } from '../../api/executions/stream-slots';

const refusal = (grant: SlotGrant) => (grant.ok ? 'granted' : `${grant.refused.scope} ${grant.refused.cap}`);

describe('unit: event stream slots per client, per wider network and per process', () => {
  it('when one IPv6 /56 opens streams from each of its 256 /64s, then it holds its site share and every other client is still served', () => {
    const slots = new StreamSlots({ maxStreams: 5000, maxPerClient: 20, maxPerSite: 80, maxPerNetwork: 250 });
    let granted = 0;
    for (let i = 0; i < 256; i++)
      for (let j = 0; j < 20; j++) if (slots.take(`2001:db8:0:${(0x100 + i).toString(16)}::${j + 1}`).ok) granted++;
    assert.equal(granted, 80, 'the /56 gets its share, not the process');
    assert.equal(refusal(slots.take('2001:db8:0:1ff::1')), 'site 80');
    assert.equal(refusal(slots.take('2001:db8:1:100::1')), 'granted', 'another /48');
    assert.equal(refusal(slots.take('198.51.100.1')), 'granted', 'an IPv4 client');
  });

  it('when the /56s of one /48 each take their share, then the /48 stops at its network share', () => {
    const slots = new StreamSlots({ maxStreams: 5000, maxPerClient: 20, maxPerSite: 80, maxPerNetwork: 250 });
    let granted = 0;
    for (let site = 0; site < 256; site++)
      for (let n = 0; n < 80; n++) if (slots.take(`2001:db8:7:${((site << 8) | (n % 4)).toString(16)}::${n + 1}`).ok) granted++;
    assert.equal(granted, 250);
    assert.equal(refusal(slots.take('2001:db8:7:ff00::1')), 'network 250');
  });

  it('when the addresses of one IPv4 /24 each take their share, then the /24 stops at its network share', () => {
    const slots = new StreamSlots({ maxStreams: 5000, maxPerClient: 20, maxPerSite: 80, maxPerNetwork: 250 });
    let granted = 0;
    for (let host = 0; host < 256; host++) for (let n = 0; n < 20; n++) if (slots.take(`203.0.113.${host}`).ok) granted++;
    assert.equal(granted, 250);
    assert.equal(refusal(slots.take('203.0.114.1')), 'granted', 'the next /24');
  });

  it('when the process is full, then a client within all its shares gets the process refusal; a release (once) frees every count', () => {
    const slots = new StreamSlots({ maxStreams: 2, maxPerClient: 1, maxPerSite: 2, maxPerNetwork: 2 });
    const first = slots.take('2001:db8::1');
    assert.ok(first.ok);
    assert.equal(refusal(slots.take('2001:db8::2')), 'client 1');
    assert.ok(slots.take('2001:db8:0:1::1').ok);
    assert.equal(refusal(slots.take('2001:db8:0:2::1')), 'site 2');
    assert.equal(refusal(slots.take('192.0.2.1')), 'process 2');
    first.release();
    first.release();
    assert.equal(slots.streams, 1);
    assert.equal(refusal(slots.take('2001:db8::1')), 'granted');
  });
});
