/**
 * How a storage node knows a request comes from this service, for it, and once
 * (docs/decisions/0060): the service signs every request with an HMAC-SHA256 over its method, the
 * node it is addressed to (the authority `host:port` of the node's URL), its path with query, a
 * timestamp, a random id and the SHA-256 of its body; the node checks the headers before it reads
 * the body and the signature before it parses anything. No I/O here: the keys come in as bytes
 * (lib/node-keys-file.ts reads them), the clock is injectable, and the replay memory is given (the
 * node's is durable, storage-node/request-id-log.ts).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The four headers a signed request carries. */
export const AUTH_HEADERS = {
  id: 'x-node-auth-id',
  timestamp: 'x-node-auth-timestamp',
  node: 'x-node-auth-node',
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
/**
 * The scheme's version: the first line of what is signed and the signature's prefix. v2 added the
 * node; a v1 signature (valid on every node) is refused as malformed.
 */
const VERSION = 'v2';
const ID_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
const TIMESTAMP_PATTERN = /^[0-9]{1,12}$/;
/** An authority as WHATWG URL's `host` writes it: a lower-case name or IPv4, or [IPv6], and a port unless the scheme's default. */
const NODE_PATTERN = /^(?:[a-z0-9.-]{1,253}|\[[0-9a-f:.]{2,45}\])(?::[0-9]{1,5})?$/;
const SIGNATURE_PATTERN = /^v2,[A-Za-z0-9+/]{43}=$/;

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

/**
 * The node a URL addresses, as signed: its authority (`host:port`, the port left out when it is
 * the scheme's default), lower-cased by the URL parser. The client signs it from the URL it sends
 * to; the node compares it with the one it was told is its own (`--public-url`, else its bound address).
 */
export function nodeOf(url: string | URL): string {
  return (typeof url === 'string' ? new URL(url) : url).host;
}

/** What is signed of one request. `target` is the path with its query, exactly as sent (`req.url` on the node). */
export interface SignedParts {
  method: string;
  /** The node the request is for (`nodeOf` its URL). */
  node: string;
  target: string;
  body: Uint8Array | string;
}

// One field a line: none of them can hold a newline (HTTP methods and request targets cannot, the
// node, timestamp and id are checked against their patterns, the digest is base64), so no two
// requests sign the same text.
function signedText(parts: SignedParts, timestamp: string, id: string): string {
  const digest = createHash('sha256').update(parts.body).digest('base64');
  return `${VERSION}\n${parts.method.toUpperCase()}\n${parts.node}\n${parts.target}\n${timestamp}\n${id}\n${digest}`;
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
    [AUTH_HEADERS.node]: parts.node,
    [AUTH_HEADERS.signature]: `${VERSION},${hmac(keys[0], signedText(parts, timestamp, id)).toString('base64')}`,
  };
}

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** A request as the node received it: its body read (bounded), not parsed. The node it was signed for is in its headers. */
export interface ReceivedRequest extends Omit<SignedParts, 'node'> {
  headers: Headers;
}

/** 401: not this service's request (or not for this node). 503: the replay memory is full, the same request may come again later. */
export type AuthOutcome = { ok: true } | { ok: false; status: 401 | 503; reason: string };

/**
 * Whether an id remembered until `expiresAtMs` may be forgotten at `nowMs`. The same bound the
 * timestamp check uses: a request is refused as too old only once `nowMs` is past its expiry, so
 * there is no instant at which it is still accepted and its id already forgotten.
 */
export const isExpired = (expiresAtMs: number, nowMs: number): boolean => expiresAtMs < nowMs;

/** Where a verifier remembers the ids it accepted. */
export interface ReplayMemory {
  /**
   * 'new' (now remembered until `expiresAtMs`), 'seen' (a replay) or 'full' (too many live ids to
   * take one more). May throw when it cannot record the id; the request is then not served.
   */
  remember(id: string, expiresAtMs: number, nowMs: number): 'new' | 'seen' | 'full';
}

/**
 * Request ids seen within the tolerance, in memory, bounded by time (an id is dropped once its
 * timestamp is refused anyway) and by count (when full of live ids, `remember` says so instead of growing).
 */
export class ReplayCache implements ReplayMemory {
  /** id → epoch ms after which a request with it is refused by its timestamp alone. Insertion order is about time order. */
  private readonly expiries = new Map<string, number>();
  private lastSweepMs = -Infinity;

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.expiries.size;
  }

  /** Takes back an id remembered earlier (at start-up, from a durable copy), whatever the capacity. */
  restore(id: string, expiresAtMs: number): void {
    this.expiries.set(id, expiresAtMs);
  }

  /** Drops an id that `remember` took but whose request could not be recorded. */
  forget(id: string): void {
    this.expiries.delete(id);
  }

  remember(id: string, expiresAtMs: number, nowMs: number): 'new' | 'seen' | 'full' {
    // The oldest first: cheap, and it keeps the map near its live size.
    for (const [oldId, expiry] of this.expiries) {
      if (!isExpired(expiry, nowMs)) break;
      this.expiries.delete(oldId);
    }
    if (this.expiries.has(id)) return 'seen';
    if (this.expiries.size >= this.capacity) {
      // Timestamps may arrive out of order, so expired ids can hide behind a live one; a full
      // sweep finds them, at most once a second so that a full cache stays cheap to refuse from.
      if (nowMs - this.lastSweepMs >= 1000) {
        this.lastSweepMs = nowMs;
        for (const [oldId, expiry] of this.expiries) if (isExpired(expiry, nowMs)) this.expiries.delete(oldId);
      }
      if (this.expiries.size >= this.capacity) return 'full';
    }
    this.expiries.set(id, expiresAtMs);
    return 'new';
  }
}

const header = (headers: Headers, name: string): string | undefined => {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
};

const refuse = (reason: string): AuthOutcome => ({ ok: false, status: 401, reason });

export interface VerifierOptions {
  /**
   * The authorities this node answers to (`nodeOf` of the URLs the service uses for it). A
   * function, because a node started on port 0 knows its own only once it listens.
   */
  nodes: () => readonly string[];
  toleranceS?: number;
  /** Where accepted ids are remembered; by default in memory, `maxRememberedIds` of them. */
  memory?: ReplayMemory;
  maxRememberedIds?: number;
  now?: () => number;
}

/** The node's side: checks each request against every key, its own address, the clock and the ids it has seen. */
export class RequestVerifier {
  private readonly toleranceMs: number;
  private readonly now: () => number;
  private readonly seen: ReplayMemory;
  private readonly nodes: () => readonly string[];

  constructor(
    private readonly keys: NodeKeys,
    options: VerifierOptions,
  ) {
    this.toleranceMs = (options.toleranceS ?? DEFAULT_TOLERANCE_S) * 1000;
    this.now = options.now ?? Date.now;
    this.nodes = options.nodes;
    this.seen = options.memory ?? new ReplayCache(options.maxRememberedIds ?? DEFAULT_MAX_REMEMBERED_IDS);
  }

  /**
   * What can be checked before the body is read: the headers are there and well-formed, the
   * request is for this node, its timestamp is within the tolerance. Anyone can forge these; they
   * only spare the node from reading bodies that cannot verify.
   */
  checkHeaders(headers: Headers): AuthOutcome {
    return this.check(headers, this.now());
  }

  private check(headers: Headers, nowMs: number): AuthOutcome {
    const id = header(headers, AUTH_HEADERS.id);
    const timestamp = header(headers, AUTH_HEADERS.timestamp);
    const node = header(headers, AUTH_HEADERS.node);
    const signature = header(headers, AUTH_HEADERS.signature);
    if (id === undefined || timestamp === undefined || node === undefined || signature === undefined) {
      return refuse(`unsigned request: ${Object.values(AUTH_HEADERS).join(', ')} are required`);
    }
    if (!ID_PATTERN.test(id) || !TIMESTAMP_PATTERN.test(timestamp) || !NODE_PATTERN.test(node) || !SIGNATURE_PATTERN.test(signature)) {
      return refuse(`malformed signature headers (this node takes ${VERSION} signatures)`);
    }
    if (!this.nodes().includes(node))
      return refuse(`signed for node ${node}, not for this one (or its --public-url is not the address the service uses)`);
    // In whole milliseconds, the same arithmetic as the id's expiry (isExpired).
    const ageMs = nowMs - Number(timestamp) * 1000;
    const tolerance = this.toleranceMs / 1000;
    if (ageMs > this.toleranceMs) return refuse(`request timestamp is more than ${tolerance} s old (or the clocks differ)`);
    if (-ageMs > this.toleranceMs) return refuse(`request timestamp is more than ${tolerance} s ahead (or the clocks differ)`);
    return { ok: true };
  }

  /**
   * Whether `request` is this service's, for this node, and new. Its id is remembered only once
   * its signature verified, so that nobody without a key can fill the replay memory; and before
   * this returns, so before the request is applied.
   */
  verify(request: ReceivedRequest): AuthOutcome {
    const nowMs = this.now();
    const checked = this.check(request.headers, nowMs);
    if (!checked.ok) return checked;
    const { headers } = request;
    const [id, timestamp, node, signature] = [AUTH_HEADERS.id, AUTH_HEADERS.timestamp, AUTH_HEADERS.node, AUTH_HEADERS.signature].map(
      (name) => header(headers, name) as string,
    );
    const given = Buffer.from(signature.slice(VERSION.length + 1), 'base64');
    const text = signedText({ ...request, node }, timestamp, id);
    if (!this.keys.some((key) => timingSafeEqual(hmac(key, text), given))) return refuse('the signature does not verify with any key');
    switch (this.seen.remember(id, Number(timestamp) * 1000 + this.toleranceMs, nowMs)) {
      case 'seen':
        return refuse('replayed request: this id was already used');
      case 'full':
        return { ok: false, status: 503, reason: 'too many recent requests to check for replays; try again shortly' };
      case 'new':
        return { ok: true };
    }
  }
}
