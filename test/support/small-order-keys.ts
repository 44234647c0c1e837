/**
 * Test vectors: the y-coordinates of libsodium's small-order blocklist, written out here
 * independently of domain/ed25519.ts so that tests check the implementation against them. The
 * first five are canonical encodings; the last two are y ≥ p (non-canonical) spellings.
 */
export const SMALL_ORDER_Y_HEX = [
  '0000000000000000000000000000000000000000000000000000000000000000',
  '0100000000000000000000000000000000000000000000000000000000000000',
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
] as const;

/** How many of SMALL_ORDER_Y_HEX are canonical encodings of a point. */
export const CANONICAL_SMALL_ORDER_COUNT = 5;
