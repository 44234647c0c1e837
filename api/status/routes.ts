import type Router from '@koa/router';
import type { Context } from 'koa';
import { Ajv } from 'ajv';
import { badRequest } from '../../domain/errors';
import type { AppDeps } from '../deps';
import { depositChainParamSchema, depositTxHashParamSchema } from '../deposits/contract';
import { readDepositEntries } from '../deposits/routes';
import { executionIdParamSchema, walletParamSchema } from '../executions/request-schemas';
import type { ExecutionService } from '../executions/service';
import type { RateLimits } from '../http/rate-limit';
import { executionPage } from './execution-page';
import { ASSETS } from '../http/pages';
import { SCRIPT, STYLESHEET } from './assets';
import { transactionPage } from './transaction-page';

const ajv = new Ajv({ strict: true });
const checks = {
  wallet: ajv.compile(walletParamSchema),
  executionId: ajv.compile(executionIdParamSchema),
  chain: ajv.compile(depositChainParamSchema),
  txHash: ajv.compile(depositTxHashParamSchema),
};

/** A path parameter as its route's schema takes it; otherwise a 400 page that shows what was asked, as text. */
function param(ctx: Context, name: keyof typeof checks, what: string): string {
  const value = String(ctx.params[name]);
  if (!checks[name](value)) throw badRequest(`“${value}” is not ${what}, so there is nothing to show for it`);
  return value;
}

function page(ctx: Context, status: number, body: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  // A status page is read live: never from a cache.
  ctx.set('Cache-Control', 'no-store');
  ctx.body = body;
}

/**
 * The depositor's status pages (docs/integrate.md "A status page for depositors"), public reads
 * limited per client like the GET of a record: one per execution and one per deposit transaction,
 * rendered on the server, with their own script and stylesheet. Errors are pages too (errorStyle
 * `page`, api/app.ts).
 */
export function statusPageRoutes(router: Router, deps: AppDeps, executions: ExecutionService, limits: RateLimits): void {
  router.get(`${ASSETS}/status.js`, (ctx) => {
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = SCRIPT;
  });
  router.get(`${ASSETS}/status.css`, (ctx) => {
    ctx.type = 'text/css; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = STYLESHEET;
  });

  router.get('/status/tx/:chain/:txHash', limits.publicRoute, async (ctx) => {
    const chain = param(ctx, 'chain', 'a chain (evm:<chainId>)');
    const txHash = param(ctx, 'txHash', 'a transaction hash (0x and 64 hex digits)').toLowerCase();
    const entries = await readDepositEntries(deps, chain, txHash);
    const progress = entries.length === 0 ? await executions.progress.transaction(chain, txHash) : undefined;
    const answer = transactionPage({ chain, txHash, entries, progress, explorer: deps.config.explorers[chain] });
    page(ctx, answer.status, answer.body);
  });

  router.get('/status/:wallet/:executionId', limits.publicRoute, async (ctx) => {
    const wallet = param(ctx, 'wallet', 'a wallet');
    const executionId = param(ctx, 'executionId', 'an execution id');
    const record = await executions.get(wallet, executionId);
    // As the GET route: a read model that is down costs only the refunds.
    const answer = await executions.answer(record).catch(() => executions.reasoned(record));
    const chain = record.depositTarget?.chain ?? record.deposit?.chain;
    const events = `/api/v1/executions/${encodeURIComponent(wallet)}/${encodeURIComponent(executionId)}/events`;
    page(
      ctx,
      200,
      executionPage(
        {
          record: { ...answer, statusReason: answer.statusReason! },
          explorer: chain === undefined ? undefined : deps.config.explorers[chain],
          confirmations: chain === undefined ? undefined : deps.deposits?.confirmations(chain),
        },
        events,
      ),
    );
  });
}
