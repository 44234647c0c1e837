import os from 'node:os';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/config';
import { openDatabase } from '../db/database';
import { RefundLedger, type RefundState, type Settlement } from '../db/refund-ledger';
import { isRefundTxHash } from '../db/refund-settlement';
import { REFUND_STATES } from '../contracts/refunds';

const USAGE = `usage: npm run --silent refunds -- list [--state due|held|paying|refunded|waived|void] [--wallet W [--execution-id E]] [--chain evm:N] [--limit N]
       npm run --silent refunds -- refunded --id ID --tx-hash HASH [--by NAME]
       npm run --silent refunds -- waived --id ID --reason TEXT [--by NAME]
       npm run --silent refunds -- approve --id ID [--by NAME]

The refunds ledger of the read model this service uses (DATABASE_URL or DATABASE_FILE), for
operators without curl; the HTTP routes are GET /api/v1/refunds and POST /api/v1/refunds/{id}/…
list      one JSON row a line, newest first (default: --state due, at most --limit 100)
refunded  records that row ID was paid back by transaction HASH (0x + 64 hex digits, any case;
          stored lowercase); the same again changes nothing; a HASH that already pays back a
          row of another deposit address exits 1
waived    records that row ID will not be paid back, and why
approve   lets the service pay row ID, held above-limit (above its asset's REFUND_LIMITS)
A settlement is recorded once: another one for a settled row exits 1 and changes nothing.
--by names who settled or approved it (default cli:<user>).`;

/** Runs one command against `ledger`; answers the lines to print and the exit code. */
export async function refundsCommand(argv: string[], ledger: RefundLedger): Promise<{ out: string[]; err: string[]; code: number }> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      state: { type: 'string' },
      wallet: { type: 'string' },
      'execution-id': { type: 'string' },
      chain: { type: 'string' },
      limit: { type: 'string' },
      id: { type: 'string' },
      'tx-hash': { type: 'string' },
      reason: { type: 'string' },
      by: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  const usage = (code: number) => ({ out: code === 0 ? [USAGE] : [], err: code === 0 ? [] : [USAGE], code });
  const command = positionals[0];
  if (values.help) return usage(0);
  if (command === 'list') {
    const state = (values.state ?? 'due') as RefundState;
    const limit = Number(values.limit ?? 100);
    if (!(REFUND_STATES as readonly string[]).includes(state) || !Number.isInteger(limit) || limit < 1 || limit > 10_000) return usage(2);
    const out: string[] = [];
    let after;
    do {
      const page = await ledger.list({
        state,
        wallet: values.wallet,
        executionId: values['execution-id'],
        chain: values.chain,
        pageSize: Math.min(200, limit - out.length),
        after,
      });
      out.push(...page.rows.map((row) => JSON.stringify(row)));
      after = page.next;
    } while (after && out.length < limit);
    return { out, err: [], code: 0 };
  }
  const by = values.by ?? `cli:${os.userInfo().username}`;
  if (command === 'approve' && values.id) {
    const approved = await ledger.approve(values.id, by);
    if (approved.outcome === 'missing') return { out: [], err: [`refunds: no row ${values.id}`], code: 1 };
    if (approved.outcome === 'conflict')
      return {
        out: [JSON.stringify(approved.row)],
        err: [`refunds: row ${values.id} is ${approved.row.state}, not held above-limit`],
        code: 1,
      };
    return { out: [JSON.stringify(approved.row)], err: [], code: 0 };
  }
  let settlement: Settlement;
  if (command === 'refunded' && values.id && values['tx-hash']) {
    if (!isRefundTxHash(values['tx-hash'])) return { out: [], err: ['refunds: --tx-hash must be 0x + 64 hex digits'], code: 2 };
    settlement = { state: 'refunded', txHash: values['tx-hash'] };
  } else if (command === 'waived' && values.id && values.reason) settlement = { state: 'waived', reason: values.reason };
  else return usage(2);
  const result = await ledger.settle(values.id, settlement, by);
  switch (result.outcome) {
    case 'missing':
      return { out: [], err: [`refunds: no row ${values.id}`], code: 1 };
    case 'conflict':
      return { out: [JSON.stringify(result.row)], err: [`refunds: row ${values.id} is already ${result.row.state} otherwise`], code: 1 };
    case 'paying':
      return {
        out: [JSON.stringify(result.row)],
        err: [
          `refunds: row ${values.id} is being paid by the service (its transaction is out); settle it once its nonce is mined, if still needed`,
        ],
        code: 1,
      };
    case 'nonce-taken':
      return {
        out: [JSON.stringify(result.row)],
        err: [
          `refunds: row ${values.id}'s refund nonce ${result.row.refundNonce} was taken by a transaction the service did not sign; settle it refunded --tx-hash with the transaction that paid it back, it is not waived`,
        ],
        code: 1,
      };
    case 'tx-used':
      return {
        out: [JSON.stringify(result.row)],
        err: [`refunds: transaction ${values['tx-hash']} already pays back row ${result.otherId}, of another deposit address`],
        code: 1,
      };
    case 'settled':
    case 'same':
      return { out: [JSON.stringify(result.row)], err: [], code: 0 };
  }
}

async function main(argv: string[]): Promise<void> {
  const database = await openDatabase(loadConfig().database);
  try {
    const { out, err, code } = await refundsCommand(argv, new RefundLedger(database));
    for (const line of out) console.log(line);
    for (const line of err) console.error(line);
    process.exitCode = code;
  } finally {
    await database.close();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    console.error('refunds:', (err as Error).message);
    process.exit(2);
  });
}
