import assert from 'node:assert/strict';
import { canonicalJson, intentHash } from '../../domain/canonical';
import { ServiceError } from '../../domain/errors';

const isBadRequest = (e: unknown) => e instanceof ServiceError && e.status === 400;

describe('domain/canonical', () => {
  it('when an object has keys in any order, then canonicalJson sorts them and drops whitespace', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [1, 2], c: 'x' } }), '{"a":{"c":"x","d":[1,2]},"b":1}');
  });

  it('when keys hold non-ASCII characters, then they sort by UTF-16 code units (RFC 8785 3.2.3)', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    // Read the order off the text (Object.keys would move "1" first, as an integer-like key).
    const text = canonicalJson(input);
    const values = Object.values(input).sort((a, b) => text.indexOf(a) - text.indexOf(b));
    // The emoji (U+1F600, surrogates D83D DE00) sorts before U+FB33: code units, not code points.
    assert.deepEqual(values, [
      'Carriage Return',
      'One',
      'Control',
      'Latin Small Letter O With Diaeresis',
      'Euro Sign',
      'Emoji: Grinning Face',
      'Hebrew Letter Dalet With Dagesh',
    ]);
    assert.ok(text.startsWith('{"\\r":"Carriage Return","1":"One","\u0080":"Control"'));
  });

  it('when numbers and strings are serialised, then the output is the RFC 8785 3.2.2 example', () => {
    const input = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],' +
        '"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
    );
    assert.equal(
      canonicalJson(input),
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('when -0, 1e21 and 100 are serialised, then they read 0, 1e+21 and 100', () => {
    assert.equal(canonicalJson([-0, 1e21, 1e2, 0.1 + 0.2]), '[0,1e+21,100,0.30000000000000004]');
  });

  it('when an intent is hashed, then intentHash is the fixed vector computed with node:crypto over the hand-written canonical text', () => {
    // Canonical text written by hand:
    //   {"a":[1,2.5,{"c":null,"d":true}],"amount":1e+21,"b":2,"id":"x-1","€":"euro"}
    // sha256 by `node -e "crypto.createHash('sha256').update(text,'utf8').digest('hex')"`.
    const expected = '0ad6145137e74e87b108824f461655df90782a2f480b2362b67d613b0a2f9f66';
    const intent = JSON.parse('{"\u20ac":"euro","b":2,"id":"x-1","a":[1,2.50,{"d":true,"c":null}],"amount":1000000000000000000000}');
    assert.equal(canonicalJson(intent), '{"a":[1,2.5,{"c":null,"d":true}],"amount":1e+21,"b":2,"id":"x-1","\u20ac":"euro"}');
    assert.equal(intentHash(intent), expected);
  });

  it('when two JSON texts differ only in key order, whitespace and number spelling, then their intentHash is equal', () => {
    const a = JSON.parse('{ "amount": 1.50, "to": "bob", "fee": 1E2 }');
    const b = JSON.parse('{"fee":100,"to":"bob","amount":1.5}');
    assert.equal(intentHash(a), intentHash(b));
    assert.match(intentHash(a), /^[0-9a-f]{64}$/);
  });

  it('when an intent value changes, then its intentHash changes', () => {
    assert.notEqual(intentHash({ amount: '1.5' }), intentHash({ amount: 1.5 }));
  });

  it('when undefined members appear, then they are dropped from objects and become null in arrays', () => {
    assert.equal(canonicalJson({ a: undefined, b: [undefined, 2], c: 1 }), '{"b":[null,2],"c":1}');
  });

  it('when a value has no canonical JSON form, then canonicalJson throws a 400 ServiceError', () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    for (const bad of [undefined, NaN, Infinity, 1n, circular]) {
      assert.throws(() => canonicalJson(bad), isBadRequest, String(bad));
    }
  });
});
