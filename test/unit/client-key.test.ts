import assert from 'node:assert/strict';
import { clientKey, clientNetworks } from '../../api/http/client-key';

describe('unit: the key a client is rate-limited under', () => {
  it('when the address is IPv4 or IPv4-mapped, then the key is the IPv4 address', () => {
    assert.equal(clientKey('203.0.113.7'), '203.0.113.7');
    assert.equal(clientKey('::ffff:203.0.113.7'), '203.0.113.7');
  });

  it('when IPv6 addresses share their first 64 bits, however written, then they share one key', () => {
    const keys = ['2001:db8:1:2::1', '2001:0db8:0001:0002:ffff:ffff:ffff:ffff', '2001:db8:1:2:a:b:c:d%eth0', '2001:db8:1:2::1.2.3.4'].map(
      clientKey,
    );
    assert.deepEqual(new Set(keys), new Set(['2001:db8:1:2::/64']));
    assert.equal(clientKey('::1'), '0:0:0:0::/64');
  });

  it('when IPv6 addresses differ in their first 64 bits, then their keys differ', () => {
    assert.notEqual(clientKey('2001:db8:1:2::1'), clientKey('2001:db8:1:3::1'));
    assert.notEqual(clientKey('2001:db8::1'), clientKey('2001:db9::1'));
  });
});

describe('unit: the wider networks a client address belongs to', () => {
  it('when the address is IPv6, then it has its /64, its /56 and its /48, however written', () => {
    assert.deepEqual(clientNetworks('2001:db8:a:b1c2::1'), {
      client: '2001:db8:a:b1c2::/64',
      site: '2001:db8:a:b100::/56',
      network: '2001:db8:a::/48',
    });
    assert.deepEqual(clientNetworks('2001:0db8:000a:b1ff:ffff:ffff:ffff:ffff'), {
      client: '2001:db8:a:b1ff::/64',
      site: '2001:db8:a:b100::/56',
      network: '2001:db8:a::/48',
    });
  });

  it('when the address is IPv4 or IPv4-mapped, then it has its /24 and no /56', () => {
    assert.deepEqual(clientNetworks('203.0.113.7'), { client: '203.0.113.7', network: '203.0.113.0/24' });
    assert.deepEqual(clientNetworks('::ffff:203.0.113.7'), { client: '203.0.113.7', network: '203.0.113.0/24' });
  });

  it('when the address is no IP address, then it is its own client and has no wider network', () => {
    assert.deepEqual(clientNetworks('unix-socket'), { client: 'unix-socket' });
  });
});
