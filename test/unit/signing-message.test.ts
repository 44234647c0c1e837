import assert from 'node:assert/strict';
import { buildSigningMessage } from '../../domain/signing-message';
import { ServiceError } from '../../domain/errors';

const isBadRequest = (e: unknown) => e instanceof ServiceError && e.status === 400;

const input = {
  domain: 'localhost',
  executionId: 'exec-1',
  address: '7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU',
  intentHash: '0ad6145137e74e87b108824f461655df90782a2f480b2362b67d613b0a2f9f66',
  timestamp: 1700000000,
};

describe('domain/signing-message', () => {
  it('when the fields are given, then the message is exactly the four lines of docs/api-executions.md without a trailing newline', () => {
    assert.equal(
      buildSigningMessage(input),
      'localhost asks you to sign execution exec-1\n' +
        'Wallet: 7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU\n' +
        'Intent: 0ad6145137e74e87b108824f461655df90782a2f480b2362b67d613b0a2f9f66\n' +
        'Timestamp: 1700000000',
    );
  });

  it('when a field holds a line break, then it throws a 400 ServiceError', () => {
    assert.throws(() => buildSigningMessage({ ...input, domain: 'evil.example\nWallet: x' }), isBadRequest);
    assert.throws(() => buildSigningMessage({ ...input, executionId: 'a\rb' }), isBadRequest);
  });

  it('when the timestamp is not an integer, then it throws a 400 ServiceError', () => {
    assert.throws(() => buildSigningMessage({ ...input, timestamp: 1.5 }), isBadRequest);
    assert.throws(() => buildSigningMessage({ ...input, timestamp: Number.NaN }), isBadRequest);
  });
});
