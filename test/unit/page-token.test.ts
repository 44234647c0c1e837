import assert from 'node:assert/strict';
import { decodePageToken, encodePageToken } from '../../db/page-token';

describe('db/page-token', () => {
  it('when a position is encoded, then decoding gives it back', () => {
    const position = { createdAt: '2026-11-23T08:00:00.123Z', executionId: 'ex-1._A' };
    assert.deepEqual(decodePageToken(encodePageToken(position)), position);
  });

  it('when a token was not issued by the API (garbage, wrong shape, bad time or id), then it decodes to undefined', () => {
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    for (const token of [
      '',
      '!!!',
      'abc',
      b64({ createdAt: 'x' }),
      b64(['2026-11-23T08:00:00.123Z']),
      b64(['yesterday', 'ex']),
      b64(['2026-13-45T99:00:00.000Z', 'ex']),
      b64(['2026-11-23T08:00:00.123Z', 'a b']),
      b64([1, 2]),
      'A'.repeat(500),
    ]) {
      assert.equal(decodePageToken(token), undefined, token);
    }
  });
});
