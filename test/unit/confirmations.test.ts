import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../config/config';
import { DEFAULT_CONFIRMATIONS, confirmationsFor, parseConfirmations } from '../../config/confirmations';
import { chainConfirmations } from '../../worker/chain-watcher-start';

describe('unit: deposit confirmations per chain', () => {
  it('when DEPOSIT_CONFIRMATIONS is unset, then a known chain takes the table (Ethereum 64, its test networks 12, dev chains 2) and another has none', () => {
    const rule = parseConfirmations(undefined);
    assert.equal(confirmationsFor(rule, 'evm:1'), 64);
    assert.equal(confirmationsFor(rule, 'evm:11155111'), 12);
    assert.equal(confirmationsFor(rule, 'evm:31337'), 2);
    assert.equal(confirmationsFor(rule, 'evm:137'), undefined);
    assert.equal(DEFAULT_CONFIRMATIONS['evm:1'], 64);
  });

  it('when it is one number, then every chain takes it, the table too', () => {
    const rule = parseConfirmations('20');
    assert.equal(confirmationsFor(rule, 'evm:1'), 20);
    assert.equal(confirmationsFor(rule, 'evm:137'), 20);
  });

  it('when it names chains, then each named chain takes its own number and the others the table', () => {
    const rule = parseConfirmations(' evm:1=96 , evm:137=256,evm:31337=3');
    assert.equal(confirmationsFor(rule, 'evm:1'), 96);
    assert.equal(confirmationsFor(rule, 'evm:137'), 256);
    assert.equal(confirmationsFor(rule, 'evm:31337'), 3);
    assert.equal(confirmationsFor(rule, 'evm:11155111'), 12, 'not named: the table');
    assert.equal(confirmationsFor(rule, 'evm:8453'), undefined, 'neither: none');
  });

  it('when it is malformed, then loading fails with a ConfigError naming it', () => {
    for (const bad of ['0', '1001', 'two', 'evm:1', 'evm:1=0', 'evm:1=64,evm:1=12', '1=64', 'evm:x=3', 'evm:1=64;evm:2=3'])
      assert.throws(
        () => loadConfig({ CHAIN_RPC_URL: 'http://127.0.0.1:8545', DEPOSIT_CONFIRMATIONS: bad }),
        (err: Error) => err instanceof ConfigError && /DEPOSIT_CONFIRMATIONS/.test(err.message),
        bad,
      );
  });

  it('when a number it sets is not below CHAIN_REORG_WINDOW, then loading fails; a table number is checked once the chain is known', () => {
    assert.throws(
      () => loadConfig({ CHAIN_RPC_URL: 'http://127.0.0.1:8545', DEPOSIT_CONFIRMATIONS: 'evm:1=200' }),
      (err: Error) => err instanceof ConfigError && /CHAIN_REORG_WINDOW \(128\)/.test(err.message),
    );
    const chain = loadConfig({ CHAIN_RPC_URL: 'http://127.0.0.1:8545', CHAIN_REORG_WINDOW: '50' }).chain!;
    assert.deepEqual(chainConfirmations(chain, 'evm:31337'), { ok: true, confirmations: 2 });
    const mainnet = chainConfirmations(chain, 'evm:1');
    assert.ok(!mainnet.ok && /CHAIN_REORG_WINDOW \(50\)/.test(mainnet.reason));
    const unknown = chainConfirmations(chain, 'evm:4242');
    assert.ok(!unknown.ok && /evm:4242=N/.test(unknown.reason));
  });
});
