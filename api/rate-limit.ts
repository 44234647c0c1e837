import type { Context, Next } from 'koa';
import proxyaddr from 'proxy-addr';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../config/config';
import { tooManyRequests } from '../domain/errors';
import { WALLET_PATTERN } from './schemas';

const WALLET = new RegExp(WALLET_PATTERN);

/**
 * Per-process request limits (docs/operations.md "Rate limits"): per client IP and per wallet on
 * the routes without a token, per token id on the routes with one. A request over a limit is 429
 * with `Retry-After`. Each API process counts on its own; several processes behind a load balancer
 * allow N times the limit, so a limit across processes belongs in the load balancer or a shared
 * store (rate-limiter-flexible's Redis or PostgreSQL limiters take the same calls).
 */
export interface RateLimits {
  /** Koa middleware for a route without a token: the client IP, then the `:wallet` path parameter. */
  readonly publicRoute: (ctx: Context, next: Next) => Promise<void>;
  /** Counts one request of an authenticated token; throws 429 over the limit. */
  token(tokenId: string): Promise<void>;
  /** The client's IP: the socket's peer, or from X-Forwarded-For only through trusted proxies. */
  clientIp(ctx: Context): string;
}

/** A limiter of `points` requests per `windowS`, or none when `points` is 0 (limit off). */
function limiter(points: number, windowS: number, keyPrefix: string): RateLimiterMemory | undefined {
  return points > 0 ? new RateLimiterMemory({ points, duration: windowS, keyPrefix }) : undefined;
}

async function consume(limit: RateLimiterMemory | undefined, key: string, what: string): Promise<void> {
  if (!limit) return;
  try {
    await limit.consume(key);
  } catch (res) {
    if (!(res instanceof RateLimiterRes)) throw res;
    throw tooManyRequests(`too many requests for this ${what}; retry later`, Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
  }
}

export function createRateLimits(config: Pick<Config, 'rateLimits' | 'trustProxy'>): RateLimits {
  const { windowS, perIp, perWallet, perToken } = config.rateLimits;
  const ip = limiter(perIp, windowS, 'ip');
  const wallet = limiter(perWallet, windowS, 'wallet');
  const token = limiter(perToken, windowS, 'token');
  // proxy-addr walks X-Forwarded-For from the socket's peer outwards and stops at the first
  // address it does not trust, so a client cannot choose its own key by sending the header.
  const trust = proxyaddr.compile([...config.trustProxy]);
  const clientIp = (ctx: Context) => proxyaddr(ctx.req, trust);
  return {
    clientIp,
    async publicRoute(ctx, next) {
      await consume(ip, clientIp(ctx), 'client address');
      const w = (ctx as Context & { params?: Record<string, string> }).params?.wallet;
      if (typeof w === 'string' && WALLET.test(w)) await consume(wallet, w, 'wallet');
      await next();
    },
    token: (tokenId) => consume(token, tokenId, 'token'),
  };
}
