/**
 * How a storage node knows a request comes from this service (docs/decisions/0060): the service
 * signs every request with an HMAC-SHA256 over its method, path with query, a timestamp, a random
 * id and the SHA-256 of its body; the node checks that before it parses anything. No I/O here:
 * the keys come in as bytes (lib/node-keys-file.ts reads them), the clock is injectable.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The three headers a signed request carries. */
export const AUTH_HEADERS = {
  id: 'x-node-auth-id',
  timestamp: 'x-node-auth-timestamp',
  signature: 'x-node-auth-signature',
} as const;

/** How far (seconds) a request's timestamp may be from the node's clock, either way. */
export const DEFAULT_TOLERANCE_S = 300;

/**
 * How many request ids a node remembers against replays. An id is kept until its timestamp leaves
 * the tolerance (at most 2 × 300 s after it came), so this allows over 300 signed requests a
 * second per node, sustained, in about 20 MB; past it the node answers 503 rather than grow.
 */
export const DEFAULT_MAX_REMEMBERED_IDS = 200_000;

/** The secret format of Standard Webhooks (`whsec_` + base64), so that operators know it already. */
const KEY_PREFIX = 'whsec_';
/** An HMAC-SHA256 key shorter than its output only weakens it. */
export const MIN_KEY_BYTES = 32;
/** The scheme's version: the first line of what is signed and the signature's prefix. */
const VERSION = 'v1';
const ID_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
const TIMESTAMP_PATTERN = /^[0-9]{1,12}$/;
const SIGNATURE_PATTERN = /^v1,[A-Za-z0-9+/]{43}=$/;

/** The deployment's keys, the first one signs; every one verifies (two at once during a rotation). */
export type NodeKeys = readonly [Buffer, ...Buffer[]];

/**
 * Parses a keys file's text: one `whsec_<base64>` key a line, blank lines and `#` comments
 * ignored, at least one key. Throws an Error naming `source` and the line; never echoes a key.
 */
export function parseNodeKeys(text: string, source = 'keys file'): NodeKeys {
  const keys: Buffer[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${source} line ${i + 1}`;
    const base64 = line.startsWith(KEY_PREFIX) ? line.slice(KEY_PREFIX.length) : undefined;
    if (base64 === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(base64))
      throw new Error(`${where}: a key is ${KEY_PREFIX} followed by base64`);
    const key = Buffer.from(base64, 'base64');
    if (key.length < MIN_KEY_BYTES) throw new Error(`${where}: a key must be at least ${MIN_KEY_BYTES} bytes, got ${key.length}`);
    if (keys.some((k) => k.equals(key))) throw new Error(`${where}: the same key is listed twice`);
    keys.push(key);
  }
  if (keys.length === 0) throw new Error(`${source} holds no key (one whsec_… line expected)`);
  return keys as unknown as NodeKeys;
}

/** A fresh key line for a keys file: 32 random bytes. */
export function generateNodeKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64');
}

/** What is signed of one request. `target` is the path with its query, exactly as sent (`req.url` on the node). */
export interface SignedParts {
  method: string;
  target: string;
  body: Uint8Array | string;
}

// One field a line: none of them can hold a newline (HTTP methods and request targets cannot, the
// timestamp and id are checked against their patterns, the digest is base64), so no two requests
// sign the same text.
function signedText(parts: SignedParts, timestamp: string, id: string): string {
  const digest = createHash('sha256').update(parts.body).digest('base64');
  return `${VERSION}\n${parts.method.toUpperCase()}\n${parts.target}\n${timestamp}\n${id}\n${digest}`;
}

const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();

/**
 * The headers that sign one request with the first key. A new random id each call, so every
 * attempt of a retried request is a request of its own to the node's replay check.
 */
export function signRequest(keys: NodeKeys, parts: SignedParts, options: { nowMs?: number; id?: string } = {}): Record<string, string> {
  const timestamp = String(Math.floor((options.nowMs ?? Date.now()) / 1000));
  const id = options.id ?? randomBytes(16).toString('base64url');
  return {
    [AUTH_HEADERS.id]: id,
    [AUTH_HEADERS.timestamp]: timestamp,
    [AUTH_HEADERS.signature]: `${VERSION},${hmac(keys[0], signedText(parts, timestamp, id)).toString('base64')}`,
  };
}

/** A request as the node received it: its body read (bounded), not parsed. */
export interface ReceivedRequest extends SignedParts {
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** 401: not this service's request. 503: the replay memory is full, the same request may come again later. */
export type AuthOutcome = { ok: true } | { ok: false; status: 401 | 503; reason: string };

/**
 * Request ids seen within the tolerance, bounded by time (an id is dropped once its timestamp is
 * refused anyway) and by count (when full of live ids, `remember` says so instead of growing).
 */
export class ReplayCache {
  /** id → epoch ms after which a request with it is refused by its timestamp alone. Insertion order is about time order. */
  private readonly expiries = new Map<string, number>();
  private lastSweepMs = -Infinity;

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.expiries.size;
  }

  remember(id: string, expiresAtMs: number, nowMs: number): 'new' | 'seen' | 'full' {
    // The oldest first: cheap, and it keeps the map near its live size.
    for (const [oldId, expiry] of this.expiries) {
      if (expiry > nowMs) break;
      this.expiries.delete(oldId);
    }
    if (this.expiries.has(id)) return 'seen';
    if (this.expiries.size >= this.capacity) {
      // Timestamps may arrive out of order, so expired ids can hide behind a live one; a full
      // sweep finds them, at most once a second so that a full cache stays cheap to refuse from.
      if (nowMs - this.lastSweepMs >= 1000) {
        this.lastSweepMs = nowMs;
        for (const [oldId, expiry] of this.expiries) if (expiry <= nowMs) this.expiries.delete(oldId);
      }
      if (this.expiries.size >= this.capacity) return 'full';
    }
    this.expiries.set(id, expiresAtMs);
    return 'new';
  }
}

const header = (headers: ReceivedRequest['headers'], name: string): string | undefined => {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
};

const refuse = (reason: string): AuthOutcome => ({ ok: false, status: 401, reason });

/** The node's side: checks each request against every key, the clock and the ids it has seen. */
export class RequestVerifier {
  private readonly toleranceS: number;
  private readonly now: () => number;
  private readonly seen: ReplayCache;

  constructor(
    private readonly keys: NodeKeys,
    options: { toleranceS?: number; maxRememberedIds?: number; now?: () => number } = {},
  ) {
    this.toleranceS = options.toleranceS ?? DEFAULT_TOLERANCE_S;
    this.now = options.now ?? Date.now;
    this.seen = new ReplayCache(options.maxRememberedIds ?? DEFAULT_MAX_REMEMBERED_IDS);
  }

  /**
   * Whether `request` is this service's, and new. Its id is remembered only once its signature
   * verified, so that nobody without a key can fill the replay memory.
   */
  verify(request: ReceivedRequest): AuthOutcome {
    const id = header(request.headers, AUTH_HEADERS.id);
    const timestamp = header(request.headers, AUTH_HEADERS.timestamp);
    const signature = header(request.headers, AUTH_HEADERS.signature);
    if (id === undefined || timestamp === undefined || signature === undefined) {
      return refuse(`unsigned request: ${Object.values(AUTH_HEADERS).join(', ')} are required`);
    }
    if (!ID_PATTERN.test(id) || !TIMESTAMP_PATTERN.test(timestamp) || !SIGNATURE_PATTERN.test(signature)) {
      return refuse('malformed signature headers');
    }
    const nowMs = this.now();
    const ageS = nowMs / 1000 - Number(timestamp);
    if (ageS > this.toleranceS) return refuse(`request timestamp is more than ${this.toleranceS} s old (or the clocks differ)`);
    if (-ageS > this.toleranceS) return refuse(`request timestamp is more than ${this.toleranceS} s ahead (or the clocks differ)`);
    const given = Buffer.from(signature.slice(VERSION.length + 1), 'base64');
    const text = signedText(request, timestamp, id);
    if (!this.keys.some((key) => timingSafeEqual(hmac(key, text), given))) return refuse('the signature does not verify with any key');
    switch (this.seen.remember(id, (Number(timestamp) + this.toleranceS) * 1000, nowMs)) {
      case 'seen':
        return refuse('replayed request: this id was already used');
      case 'full':
        return { ok: false, status: 503, reason: 'too many recent requests to check for replays; try again shortly' };
      case 'new':
        return { ok: true };
    }
  }
}
