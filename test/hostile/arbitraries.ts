import fc from 'fast-check';

// Generators of hostile HTTP input for test/hostile/hostile-input.test.ts. Bodies are built as
// text, not with JSON.stringify of objects, so that duplicate keys and own "__proto__" keys reach
// the server exactly as an attacker would send them.

/** A JSON fragment inserted verbatim (JSON.stringify would drop or rewrite it). */
export class Raw {
  constructor(readonly text: string) {}
}
export type Value = Raw | unknown;
export type Entries = Array<[string, Value]>;

const fragment = (v: Value): string => (v instanceof Raw ? v.text : (JSON.stringify(v) ?? 'null'));
/** `{...}` from entries in order, duplicates kept. */
export const objectText = (entries: Entries): string => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${fragment(v)}`).join(',')}}`;

/** Keys that pollute Object.prototype when a parser or a merge treats them naively. */
export const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', '__defineGetter__', 'hasOwnProperty', 'toString', 'valueOf'] as const;
const protoPayload = new Raw('{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"polluted":"yes"}');

/** Nesting `depth` levels deep, closed or not. */
export const deepText = (depth: number, shape: 'array' | 'object', closed: boolean): string =>
  shape === 'array'
    ? '['.repeat(depth) + (closed ? ']'.repeat(depth) : '')
    : '{"a":'.repeat(depth) + (closed ? '1' + '}'.repeat(depth) : '');

/** Values of the wrong type, of absurd size, with NUL bytes, or that JSON numbers cannot hold. */
export const hostileValue: fc.Arbitrary<Value> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom<Value>(
    null,
    true,
    0,
    -1,
    1.5,
    '',
    [],
    {},
    new Raw('1e400'),
    new Raw('-0'),
    new Raw('1.0'),
    new Raw('18446744073709551616'),
    new Raw('"\\ud800"'),
    protoPayload,
  ),
  fc.integer({ min: 129, max: 20_000 }).map((n) => 'A'.repeat(n)),
  fc.string({ maxLength: 40 }).map((s) => `${s}\u0000${s}`),
  fc
    .tuple(fc.integer({ min: 20, max: 5_000 }), fc.constantFrom<'array' | 'object'>('array', 'object'), fc.boolean())
    .map(([d, s, c]) => new Raw(deepText(d, s, c))),
);

export const hostileKey: fc.Arbitrary<string> = fc.oneof(fc.constantFrom(...PROTO_KEYS), fc.string({ maxLength: 20 }), fc.constant(''));

type Mutation =
  | { kind: 'drop'; at: number }
  | { kind: 'replace'; at: number; value: Value }
  | { kind: 'add'; key: string; value: Value }
  | { kind: 'duplicate'; at: number; value: Value; before: boolean };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.nat().map((at) => ({ kind: 'drop' as const, at })),
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: hostileValue }),
  fc.record({ kind: fc.constant('add' as const), key: hostileKey, value: hostileValue }),
  fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat(), value: hostileValue, before: fc.boolean() }),
);

function mutate(entries: Entries, m: Mutation): Entries {
  const out = [...entries];
  if (out.length === 0 && m.kind !== 'add') return out;
  const at = 'at' in m ? m.at % out.length : 0;
  switch (m.kind) {
    case 'drop':
      out.splice(at, 1);
      break;
    case 'replace':
      out[at] = [out[at][0], m.value];
      break;
    case 'add':
      out.splice(at, 0, [m.key, m.value]);
      break;
    case 'duplicate':
      out.splice(m.before ? at : at + 1, 0, [out[at][0], m.value]);
      break;
  }
  return out;
}

/** The entries of a valid body, mutated 1–4 times, at the top level or inside one nested object. */
export function mutatedObject(base: Entries): fc.Arbitrary<string> {
  const nested = base
    .map(([k, v], i) => [k, v, i] as const)
    .filter(([, v]) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Raw));
  return fc.tuple(fc.array(mutation, { minLength: 1, maxLength: 4 }), fc.boolean(), fc.nat()).map(([ms, inside, pick]) => {
    if (inside && nested.length > 0) {
      const [key, value, index] = nested[pick % nested.length];
      const inner = ms.reduce(mutate, Object.entries(value as object) as Entries);
      const outer = [...base];
      outer[index] = [key, new Raw(objectText(inner))];
      return objectText(outer);
    }
    return objectText(ms.reduce(mutate, base));
  });
}

/** Byte sequences that are not UTF-8: a stray continuation byte, an overlong '/', a surrogate, 0xFF, a truncated sequence. */
export const INVALID_UTF8: readonly number[][] = [
  [0x80],
  [0xc0, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xff],
  [0xfe, 0xff],
  [0xe2, 0x82],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
];

/** Non-UTF-8 bytes: random bytes, or valid text with an invalid sequence spliced in. */
export function nonUtf8(validText: string): fc.Arbitrary<Buffer> {
  return fc.oneof(
    fc.uint8Array({ minLength: 1, maxLength: 300 }).map((b) => Buffer.concat([Buffer.from(b), Buffer.from([0xff])])),
    fc.tuple(fc.constantFrom(...INVALID_UTF8), fc.nat()).map(([seq, at]) => {
      const bytes = Buffer.from(validText, 'utf8');
      const i = at % (bytes.length + 1);
      return Buffer.concat([bytes.subarray(0, i), Buffer.from(seq), bytes.subarray(i)]);
    }),
  );
}

/** A raw, unescaped NUL byte inside the JSON text (invalid JSON: control characters must be escaped). */
export const withRawNul = (validText: string): fc.Arbitrary<Buffer> =>
  fc.nat().map((at) => {
    const i = at % (validText.length + 1);
    return Buffer.from(validText.slice(0, i) + '\u0000' + validText.slice(i), 'utf8');
  });

export const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  '*/*',
  'application/json; charset=iso-8859-1',
] as const;

/** Percent-encodes every byte, so any string (even lone surrogates, as U+FFFD) travels as a path segment. */
export const pctEncode = (bytes: Uint8Array): string => [...bytes].map((b) => '%' + b.toString(16).toUpperCase().padStart(2, '0')).join('');

/** A path segment as sent on the wire; `raw` segments may hold bytes the HTTP parser refuses. */
export interface Segment {
  text: string | Buffer;
  /** True when the decoded value matches ^[A-Za-z0-9._-]{1,128}$ (the wallet / executionId pattern). */
  valid: boolean;
  /** True when the bytes may be refused by Node's HTTP parser before the app sees them. */
  raw: boolean;
}

const PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
const seg = (text: string, raw = false): Segment => {
  let decoded: string;
  try {
    decoded = decodeURIComponent(text);
  } catch {
    decoded = text;
  }
  return { text, valid: !raw && PATTERN.test(decoded) && !text.includes('/'), raw };
};

export const hostileSegment: fc.Arbitrary<Segment> = fc.oneof(
  // NUL, escaped and raw
  fc.tuple(fc.stringMatching(/^[A-Za-z0-9]{0,8}$/), fc.stringMatching(/^[A-Za-z0-9]{0,8}$/)).map(([a, b]) => seg(`${a}%00${b}`)),
  fc
    .tuple(fc.stringMatching(/^[A-Za-z0-9]{0,8}$/), fc.stringMatching(/^[A-Za-z0-9]{1,8}$/))
    .map(([a, b]) => ({ text: Buffer.from(`${a}\u0000${b}`, 'latin1'), valid: false, raw: true })),
  // overlong: just past the pattern's 128, up to 12 KiB (still under the 16 KiB header limit)
  fc.integer({ min: 129, max: 12_000 }).map((n) => seg('w'.repeat(n))),
  // non-UTF-8, percent-encoded and raw
  fc.constantFrom(...INVALID_UTF8).map((b) => seg(pctEncode(Uint8Array.from(b)))),
  fc.uint8Array({ minLength: 1, maxLength: 12 }).map((b) => ({
    text: Buffer.concat([Buffer.from([0xff]), Buffer.from(b.map((x) => (x < 0x21 || x === 0x2f || x === 0x3f || x === 0x23 ? 0xfe : x)))]),
    valid: false,
    raw: true,
  })),
  // malformed percent-encoding, dot segments, prototype names, any Unicode text
  fc
    .constantFrom(
      '%',
      '%G1',
      '%E0%A4%A',
      '%%30',
      '.',
      '..',
      '%2e%2e',
      '...',
      '%2F',
      'a%2Fb',
      '__proto__',
      'constructor',
      'prototype',
      '%5F%5Fproto%5F%5F',
    )
    .map((s) => seg(s)),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).map((s) => seg(pctEncode(new TextEncoder().encode(s)))),
  fc.stringMatching(/^[A-Za-z0-9._-]{1,128}$/).map((s) => seg(s)),
);

export const HOSTILE_QUERY = fc.constantFrom(
  '',
  '?__proto__[polluted]=yes',
  '?constructor[prototype][polluted]=yes',
  '?a=%00&a=%FF',
  '?' + 'q'.repeat(2000),
  '?%E0%A4%A=1',
);
