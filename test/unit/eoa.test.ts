import assert from 'node:assert/strict';
import { parseEoa, toChecksumAddress } from '../../domain/eoa';
import { ServiceError } from '../../domain/errors';

// Test vectors of EIP-55 (https://eips.ethereum.org/EIPS/eip-55): the first four happen to
// checksum to all-caps and all-lowercase letters.
const VECTORS = [
  '0x52908400098527886E0F7030069857D2E4169EE7',
  '0x8617E340B3D01FA5F11F306F4090FD50E238070D',
  '0xde709f2102306220921060314715629080e2fb77',
  '0x27b1fdb04752bbc536007a920d24acb045561c26',
  '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
  '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
  '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
  '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
];

describe('domain/eoa', () => {
  for (const vector of VECTORS) {
    it(`when ${vector} is given in any case, then toChecksumAddress returns the EIP-55 vector`, () => {
      assert.equal(toChecksumAddress(vector), vector);
      assert.equal(toChecksumAddress(vector.toLowerCase()), vector);
      assert.equal(toChecksumAddress('0x' + vector.slice(2).toUpperCase()), vector);
    });

    it(`when ${vector} is parsed as given, all-lowercase or all-uppercase, then parseEoa accepts it in EIP-55 form`, () => {
      for (const spelling of [vector, vector.toLowerCase(), '0x' + vector.slice(2).toUpperCase()]) {
        assert.deepEqual(parseEoa(spelling), { ok: true, address: vector }, spelling);
      }
    });
  }

  it('when a mixed-case address has one letter in the wrong case, then parseEoa refuses it for its checksum', () => {
    const bad = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD';
    const parsed = parseEoa(bad);
    assert.equal(parsed.ok, false);
    assert.match((parsed as { reason: string }).reason, /EIP-55/);
    assert.equal(parseEoa('0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed').ok, false);
  });

  it('when the text is not 0x + 40 hex digits, then parseEoa refuses it and toChecksumAddress throws a 400', () => {
    const notAddresses: unknown[] = [
      '',
      '0x',
      '5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
      '0X5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
      '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe',
      '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed0',
      '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeg',
      ' 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
      42,
      null,
    ];
    for (const s of notAddresses) {
      const parsed = parseEoa(s);
      assert.equal(parsed.ok, false, String(s));
      assert.match((parsed as { reason: string }).reason, /40 hex digits/);
      assert.throws(
        () => toChecksumAddress(s as string),
        (e: unknown) => e instanceof ServiceError && e.status === 400,
      );
    }
  });
});
