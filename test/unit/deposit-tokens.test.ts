import assert from 'node:assert/strict';
import { allowedToken, parseDepositTokens } from '../../config/deposit-tokens';
import { ConfigError } from '../../config/config-error';

const USDC = '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48';

describe('config/deposit-tokens: DEPOSIT_TOKENS', () => {
  it('when tokens are listed per chain, then each is its chain, lowercase address, symbol and decimals, and only a listed one is allowed on its own chain', () => {
    const tokens = parseDepositTokens(`evm:1:${USDC}=USDC:6, evm:31337:0x${'ab'.repeat(20)}=tUSD:6`);
    assert.deepEqual(tokens, [
      { chain: 'evm:1', address: USDC.toLowerCase(), symbol: 'USDC', decimals: 6 },
      { chain: 'evm:31337', address: `0x${'ab'.repeat(20)}`, symbol: 'tUSD', decimals: 6 },
    ]);
    assert.equal(allowedToken(tokens, 'evm:1', `erc20:${USDC.toUpperCase().replace('0X', '0x')}`)?.symbol, 'USDC');
    assert.equal(allowedToken(tokens, 'evm:31337', `erc20:${USDC}`), undefined);
    assert.equal(allowedToken(tokens, 'evm:1', 'native'), undefined);
    assert.deepEqual(parseDepositTokens(undefined), []);
  });

  it('when an item is malformed or names a token twice, then the ConfigError names it', () => {
    for (const bad of [`evm:1:${USDC}`, `evm:1:0x123=USDC:6`, `1:${USDC}=USDC:6`, `evm:1:${USDC}=USDC:x`, `evm:1:${USDC}=USDC:99`])
      assert.throws(
        () => parseDepositTokens(bad),
        (err: Error) => err instanceof ConfigError && err.message.includes('DEPOSIT_TOKENS'),
        bad,
      );
    assert.throws(() => parseDepositTokens(`evm:1:${USDC}=USDC:6,evm:1:${USDC.toLowerCase()}=USDC2:6`), /names evm:1:0xa0b8.* twice/);
  });
});
