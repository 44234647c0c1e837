import type { Context, Next } from 'koa';
import type { Pool } from 'pg';
import proxyaddr from 'proxy-addr';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { ApiConfig } from '../../config/config';
import { SIGNATURE_REFUSED, ServiceError, tooManyRequests } from '../../domain/errors';
import { clientKey } from './client-key';

/**
 * Request limits (docs/configuration.md "Rate limits"), each answered 429 with `Retry-After`:
 * - per client (its IPv4 address or IPv6 /64) on the routes without a token: reads never spend a
 *   wallet's budget, so nobody can lock a wallet out by reading it;
 * - per wallet on its signed actions (submit, cancel), counted only once the signature verified,
 *   so only the wallet's own key can spend them;
 * - per token id on the routes with a token;
 * - per client on failed authentications (a 401, a signature that does not verify).
 * With a PostgreSQL read model (the cluster) the counters live in its database, so every API
 * process enforces one limit; should the database fail, each process falls back to its own.
 */
export interface RateLimits {
  /** Koa middleware for a route without a token: one request of this client. */
  readonly publicRoute: (ctx: Context, next: Next) => Promise<void>;
  /** Counts `points` more reads of this client (a batch's items past the one its request paid); throws 429 over the limit. */
  reads(ctx: Context, points: number): Promise<void>;
  /**
   * The budget of `wallet`'s signed actions: spend only after the signature verified and only for
   * an action that may change something; give back what an action spent that changed nothing.
   */
  walletBudget(wallet: string): { spend(): Promise<void>; giveBack(): Promise<void> };
  /** Counts one request of an authenticated token; throws 429 over the limit. */
  token(tokenId: string): Promise<void>;
  /**
   * Koa middleware: 429 for a client past its failed authentications. Each attempt takes one of
   * the client's failure points before its credential is checked and gives it back once the
   * credential verifies (`credentialVerified`), so a burst of concurrent attempts cannot all pass
   * one check of the count: no more than the limit reach the credential check per window.
   */
  readonly authFailures: (ctx: Context, next: Next) => Promise<void>;
  /** The client's IP: the socket's peer, or from X-Forwarded-For only through trusted proxies. */
  clientIp(ctx: Context): string;
}

/** Where the counters live: each process's memory, or a PostgreSQL pool shared by the APIs. */
export interface LimiterStore {
  pool?: Pool;
}

/** Created by the read model's migrations (db/migrations/, 0002-rate-limits). */
const TABLE = 'rate_limits';

function limiter(points: number, windowS: number, keyPrefix: string, store: LimiterStore): RateLimiterAbstract | undefined {
  if (points <= 0) return undefined;
  const memory = new RateLimiterMemory({ points, duration: windowS, keyPrefix });
  if (!store.pool) return memory;
  // Should the database fail, the insurance limiter answers (per process) until it is back.
  return new RateLimiterPostgres({
    storeClient: store.pool,
    tableName: TABLE,
    tableCreated: true,
    points,
    duration: windowS,
    keyPrefix,
    insuranceLimiter: memory,
    clearExpiredByTimeout: true,
  });
}

/**
 * The per-client limit's name in the RateLimit header fields of draft-ietf-httpapi-ratelimit-headers-11
 * (Structured Field Lists of Items: the policy's name, a String, with Integer parameters).
 */
export const CLIENT_POLICY = 'client';

/** `RateLimit-Policy` of a limit of `points` per `windowS` seconds (`q` quota, `w` window). */
export const ratelimitPolicy = (points: number, windowS: number) => `"${CLIENT_POLICY}";q=${points};w=${windowS}`;

/** `RateLimit` after a count: `r` what is left of the quota, `t` seconds until the window resets. */
export const ratelimitNow = (res: RateLimiterRes) =>
  `"${CLIENT_POLICY}";r=${Math.max(0, res.remainingPoints)};t=${Math.max(0, Math.ceil(res.msBeforeNext / 1000))}`;

/** Tells the client its limit and what is left of it (`ctx` given: the public routes'); answered on 429s too. */
async function consume(limit: RateLimiterAbstract | undefined, key: string, what: string, points = 1, ctx?: Context): Promise<void> {
  if (!limit) return;
  const tell = (res: RateLimiterRes) => {
    if (!ctx) return;
    ctx.set('RateLimit-Policy', ratelimitPolicy(limit.points, limit.duration));
    ctx.set('RateLimit', ratelimitNow(res));
  };
  try {
    // Nothing more to count: what is left is asked, not spent.
    const res = points <= 0 ? await limit.get(key) : await limit.consume(key, points);
    if (res) tell(res);
  } catch (res) {
    if (!(res instanceof RateLimiterRes)) throw res;
    tell(res);
    throw tooManyRequests(`too many requests for this ${what}; retry later`, Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
  }
}

const isAuthFailure = (err: unknown) => err instanceof ServiceError && (err.status === 401 || err.code === SIGNATURE_REFUSED);

/** Where authFailures leaves the function that gives the request's failure point back. */
const RELEASE_ATTEMPT = 'releaseAuthAttempt';

/**
 * Tells the failed-authentication limit that this request's credential (a token, a wallet's
 * signature) verified: its point is given back at once rather than when the request ends, so a
 * client with many slow requests in flight (60 s batches) is never refused for them.
 */
export function credentialVerified(ctx: Context): void {
  (ctx.state[RELEASE_ATTEMPT] as (() => void) | undefined)?.();
}

export function createRateLimits(config: Pick<ApiConfig, 'rateLimits' | 'trustProxy'>, store: LimiterStore = {}): RateLimits {
  const { windowS, perIp, perWallet, perToken, authFailuresPerIp } = config.rateLimits;
  const client = limiter(perIp, windowS, 'ip', store);
  const wallet = limiter(perWallet, windowS, 'wallet', store);
  const token = limiter(perToken, windowS, 'token', store);
  const failures = limiter(authFailuresPerIp, windowS, 'authfail', store);
  // proxy-addr walks X-Forwarded-For from the socket's peer outwards and stops at the first
  // address it does not trust, so a client cannot choose its own key by sending the header.
  const trust = proxyaddr.compile([...config.trustProxy]);
  const clientIp = (ctx: Context) => proxyaddr(ctx.req, trust);
  return {
    clientIp,
    async publicRoute(ctx, next) {
      await consume(client, clientKey(clientIp(ctx)), 'client address', 1, ctx);
      await next();
    },
    reads: (ctx, points) => consume(client, clientKey(clientIp(ctx)), 'client address', points, ctx),
    walletBudget: (w) => ({
      spend: () => consume(wallet, w, 'wallet'),
      // Best effort: a budget that cannot be given back (the database down) expires with its window.
      giveBack: () =>
        wallet
          ? wallet.reward(w, 1).then(
              () => undefined,
              () => undefined,
            )
          : Promise.resolve(),
    }),
    token: (tokenId) => consume(token, tokenId, 'token'),
    async authFailures(ctx, next) {
      if (!failures) return next();
      const key = clientKey(clientIp(ctx));
      // Counted before the check, in one atomic step of the store: a check-then-count would let
      // every attempt of a concurrent burst see the same count and all reach the credential check.
      try {
        await failures.consume(key);
      } catch (res) {
        if (!(res instanceof RateLimiterRes)) throw res;
        throw tooManyRequests(
          'too many failed authentications from this client address; retry later',
          Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
        );
      }
      let settled = false;
      const giveBack = () => {
        if (settled) return;
        settled = true;
        void failures.reward(key, 1).catch(() => undefined);
      };
      ctx.state[RELEASE_ATTEMPT] = giveBack;
      try {
        await next();
      } catch (err) {
        // A failure keeps its point; the failure itself is what the client gets.
        if (isAuthFailure(err)) settled = true;
        throw err;
      } finally {
        // Anything else (a 400 before the credential was looked at, a success) gives it back.
        giveBack();
      }
    },
  };
}
