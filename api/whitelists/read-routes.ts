import type Router from '@koa/router';
import type { Context } from 'koa';
import { readBatchStatus } from './status';
import { parseEoa } from '../../domain/eoa';
import { badRequest, forbidden } from '../../domain/errors';
import { AUDIT_SCOPES, canAudit, canRead, readScopes, type WhitelistKind } from '../../domain/whitelist-messages';
import { whitelistBatchWorkflowId } from '../../contracts/temporal';
import { authenticate } from '../http/auth';
import type { AppDeps } from '../deps';
import type { RateLimits } from '../http/rate-limit';
import {
  DEFAULT_PAGE_SIZE,
  batchIdParamSchema,
  eoaParamSchema,
  whitelistAuditQuerySchema,
  whitelistKindParamSchema,
  whitelistListQuerySchema,
} from './contract';
import { validator } from '../http/validate';
import type { WhitelistReads } from './reads';

interface ListQuery {
  pageSize?: number;
  pageToken?: string;
}
interface AuditQuery extends ListQuery {
  kind?: WhitelistKind;
  entry?: string;
  tokenId?: string;
  since?: string;
}

const validKind = validator<WhitelistKind>(whitelistKindParamSchema, 'kind path parameter', '');
const validEntry = validator<string>(eoaParamSchema, 'entry path parameter', '');
const validBatchId = validator<string>(batchIdParamSchema, 'batchId path parameter', '');
const validListQuery = validator<ListQuery>(whitelistListQuerySchema, 'query', 'query');
const validAuditQuery = validator<AuditQuery>(whitelistAuditQuerySchema, 'query', 'query');

/**
 * The query as the schema types it: integer parameters from their digits, everything else as sent
 * (a repeated parameter stays an array, which the schema refuses).
 */
function typedQuery(ctx: Context, integers: readonly string[]): Record<string, unknown> {
  const query: Record<string, unknown> = { ...ctx.query };
  for (const key of integers) {
    const value = query[key];
    if (typeof value === 'string' && /^[0-9]{1,9}$/.test(value)) query[key] = Number(value);
  }
  return query;
}

/** The EIP-55 form of an EOA the schema already let through; a bad mixed-case checksum is a 400. */
function checksummed(text: string, what: string): string {
  const eoa = parseEoa(text);
  if (!eoa.ok) throw badRequest(`${what} ${eoa.reason}`);
  return eoa.address;
}

const needRead = (kind: WhitelistKind) => `token lacks a scope to read the ${kind} whitelist (one of ${readScopes(kind).join(', ')})`;

/**
 * The whitelist reads: `GET /chain/whitelists/{kind}`, `/{kind}/{entry}`, `/batches/{batchId}` and
 * `/audit`. Checks in the order of the write route: 401, 400, 403; errors are `{ error, errorMessage }`.
 * Every route authenticates first and counts the request against its token's rate limit.
 */
export function whitelistReadRoutes(router: Router, deps: AppDeps, reads: WhitelistReads, limits: RateLimits): void {
  const caller = async (ctx: Context) => {
    ctx.state.errorStyle = 'whitelist';
    const principal = authenticate(ctx, deps.tokens);
    await limits.token(principal.id);
    return principal;
  };

  // Registered before /{kind} and /{kind}/{entry}, which would otherwise take `audit` and `batches` as a kind.
  router.get('/chain/whitelists/audit', limits.authFailures, async (ctx) => {
    const principal = await caller(ctx);
    const { pageSize = DEFAULT_PAGE_SIZE, pageToken, since, entry, ...filters } = validAuditQuery(typedQuery(ctx, ['pageSize']));
    if (!canAudit(principal.scopes)) throw forbidden(`token lacks a scope to read the audit trail (one of ${AUDIT_SCOPES.join(', ')})`);
    const sinceTime = since === undefined ? undefined : new Date(since);
    if (sinceTime && Number.isNaN(sinceTime.getTime())) throw badRequest('query since is not a valid time');
    const page = await reads.audit(
      {
        ...filters,
        ...(entry === undefined ? {} : { entry: checksummed(entry, 'query entry') }),
        ...(sinceTime ? { since: sinceTime.toISOString() } : {}),
      },
      pageSize,
      pageToken,
    );
    ctx.body = page;
  });

  router.get('/chain/whitelists/batches/:batchId', limits.authFailures, async (ctx) => {
    const principal = await caller(ctx);
    const batchId = validBatchId(ctx.params.batchId);
    // A token with no whitelist scope at all learns nothing, not even whether the batch exists.
    if (!principal.scopes.some((scope) => scope.startsWith('whitelist:'))) throw forbidden('token has no whitelist scope');
    ctx.state.workflowId = whitelistBatchWorkflowId(batchId);
    const { kinds, ...status } = await readBatchStatus(deps.client, batchId, deps.storageNodes);
    // The token that made the batch may follow it; others need read access to every kind it touches.
    const denied = status.tokenId === principal.id ? undefined : kinds.find((kind) => !canRead(principal.scopes, kind));
    if (denied) throw forbidden(needRead(denied));
    ctx.body = { result: status };
  });

  router.get('/chain/whitelists/:kind', limits.authFailures, async (ctx) => {
    const principal = await caller(ctx);
    const kind = validKind(ctx.params.kind);
    const { pageSize = DEFAULT_PAGE_SIZE, pageToken } = validListQuery(typedQuery(ctx, ['pageSize']));
    if (!canRead(principal.scopes, kind)) throw forbidden(needRead(kind));
    ctx.body = await reads.entries(kind, pageSize, pageToken);
  });

  router.get('/chain/whitelists/:kind/:entry', limits.authFailures, async (ctx) => {
    const principal = await caller(ctx);
    const kind = validKind(ctx.params.kind);
    const entry = checksummed(validEntry(ctx.params.entry), 'entry path parameter');
    if (!canRead(principal.scopes, kind)) throw forbidden(needRead(kind));
    ctx.body = { result: await reads.membership(kind, entry) };
  });
}
