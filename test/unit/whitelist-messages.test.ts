import assert from 'node:assert/strict';
import {
  confirmationMessage,
  confirmationOfChecksummed,
  hasScopeFor,
  ownerKey,
  ownerKeyOfChecksummed,
  requiredScopes,
  type WhitelistChange,
} from '../../domain/whitelist-messages';
import { toChecksumAddress } from '../../domain/eoa';

const ENTRY = '0x52908400098527886E0F7030069857D2E4169EE7';

describe('domain/whitelist-messages', () => {
  it('when an entry is added, then the confirmation reads "<entry> added to <kind> whitelist"', () => {
    assert.equal(
      confirmationMessage({ op_type: 'add_entry', kind: 'developer', entry: ENTRY }),
      '0x52908400098527886E0F7030069857D2E4169EE7 added to developer whitelist',
    );
  });

  it('when an entry is removed, then the confirmation reads "<entry> removed from <kind> whitelist"', () => {
    assert.equal(
      confirmationMessage({ op_type: 'remove_entry', kind: 'user', entry: ENTRY }),
      '0x52908400098527886E0F7030069857D2E4169EE7 removed from user whitelist',
    );
  });

  it('when the entry is given in lowercase, then the confirmation names it in EIP-55 form', () => {
    assert.equal(
      confirmationMessage({ op_type: 'add_entry', kind: 'user', entry: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed' }),
      '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed added to user whitelist',
    );
  });

  it('when scopes are asked for a change, then they are whitelist:*, whitelist:{kind}:* and whitelist:{kind}:{add|remove}', () => {
    assert.deepEqual(requiredScopes({ op_type: 'add_entry', kind: 'developer' }), [
      'whitelist:*',
      'whitelist:developer:*',
      'whitelist:developer:add',
    ]);
    assert.deepEqual(requiredScopes({ op_type: 'remove_entry', kind: 'user' }), [
      'whitelist:*',
      'whitelist:user:*',
      'whitelist:user:remove',
    ]);
  });

  const add: WhitelistChange = { op_type: 'add_entry', kind: 'developer', entry: ENTRY };
  const cases: Array<[string[], boolean]> = [
    [['whitelist:*'], true],
    [['whitelist:developer:*'], true],
    [['whitelist:developer:add'], true],
    [['executions:prepare', 'whitelist:developer:add'], true],
    [['whitelist:developer:remove'], false],
    [['whitelist:user:*'], false],
    [['whitelist:user:add'], false],
    [['whitelist'], false],
    [['whitelist:developer'], false],
    [['WHITELIST:*'], false],
    [[], false],
  ];
  for (const [scopes, expected] of cases) {
    it(`when a token holds [${scopes.join(', ')}], then hasScopeFor(add developer) is ${expected}`, () => {
      assert.equal(hasScopeFor(scopes, add), expected);
    });
  }

  it('when one address is spelled in different cases, then ownerKey is the same', () => {
    assert.equal(ownerKey({ kind: 'user', entry: ENTRY.toLowerCase() }), `user:${ENTRY}`);
    assert.equal(ownerKey({ kind: 'user', entry: ENTRY }), `user:${ENTRY}`);
  });

  it('when an entry is already in EIP-55 form, then the *OfChecksummed variants give what confirmationMessage and ownerKey give', () => {
    for (const raw of ['0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed', '0xFB6916095CA1DF60BB79CE92CE3EA74C37C5D359', ENTRY]) {
      for (const change of [
        { op_type: 'add_entry', kind: 'developer', entry: toChecksumAddress(raw) },
        { op_type: 'remove_entry', kind: 'user', entry: toChecksumAddress(raw) },
      ] as WhitelistChange[]) {
        assert.equal(confirmationOfChecksummed(change), confirmationMessage(change));
        assert.equal(ownerKeyOfChecksummed(change), ownerKey(change));
      }
    }
  });
});
