import type { Context } from 'koa';
import { forbidden, unauthorized } from '../../domain/errors';
import type { Principal, TokenStore } from '../../tokens/token-store';
import { credentialVerified } from './rate-limit';

// RFC 6750 §2.1: "Bearer" 1*SP b64token; the scheme name is case-insensitive (RFC 9110 §11.1).
const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i;

/** The caller behind `Authorization: Bearer <token>`, or a 401; a token that verified gives its failed-auth point back. */
export function authenticate(ctx: Context, tokens: TokenStore): Principal {
  const header = ctx.get('authorization');
  if (!header) throw unauthorized('Authorization header is missing');
  const match = BEARER.exec(header);
  if (!match) throw unauthorized('Authorization must be "Bearer <token>"');
  const principal = tokens.authenticate(match[1]);
  if (!principal) throw unauthorized('token is not valid');
  credentialVerified(ctx);
  return principal;
}

/** A 403 unless the caller holds `scope`. */
export function requireScope(principal: Principal, scope: string): void {
  if (!principal.scopes.includes(scope)) throw forbidden(`token lacks the scope ${scope}`);
}
