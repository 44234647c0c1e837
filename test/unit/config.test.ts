import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../config/config';

describe('config: rate limits and trusted proxies', () => {
  it('when nothing is set, then the documented defaults apply and no proxy is trusted', () => {
    const config = loadConfig({});
    assert.deepEqual(config.rateLimits, { windowS: 10, perIp: 200, perWallet: 100, perToken: 2000 });
    assert.deepEqual(config.trustProxy, []);
  });

  it('when the env sets limits and TRUST_PROXY, then they win over the file, and 0 turns a limit off', () => {
    const config = loadConfig({
      RATE_LIMIT_WINDOW_S: '60',
      RATE_LIMIT_PER_IP: '0',
      RATE_LIMIT_PER_WALLET: '7',
      RATE_LIMIT_PER_TOKEN: '9',
      TRUST_PROXY: 'loopback, 10.0.0.0/8',
    });
    assert.deepEqual(config.rateLimits, { windowS: 60, perIp: 0, perWallet: 7, perToken: 9 });
    assert.deepEqual(config.trustProxy, ['loopback', '10.0.0.0/8']);
  });

  it('when TRUST_PROXY or a limit is malformed, then loading fails with a ConfigError naming it', () => {
    assert.throws(
      () => loadConfig({ TRUST_PROXY: 'not-an-address' }),
      (err: Error) => err instanceof ConfigError && /TRUST_PROXY/.test(err.message),
    );
    assert.throws(
      () => loadConfig({ RATE_LIMIT_PER_IP: '-1' }),
      (err: Error) => err instanceof ConfigError && /RATE_LIMIT_PER_IP/.test(err.message),
    );
    assert.throws(
      () => loadConfig({ RATE_LIMIT_WINDOW_S: '0' }),
      (err: Error) => err instanceof ConfigError && /RATE_LIMIT_WINDOW_S/.test(err.message),
    );
  });
});
