import { atLeast, WEI } from './wei';
import type {
  ExecutionStatus,
  Deposit,
  StoredDeposit,
  DepositTarget,
  SignedPayload,
  RefusedDeposit,
  RefutedClaim,
  ExecutionRecord,
} from './execution-record';
import { MAX_REFUSED_IN_RECORD, MAX_REFUTED_IN_RECORD } from './execution-record';

// The execution state machine (docs/architecture.md "Executions"), as pure functions: each takes a record
// and returns a new one (inputs are never mutated), so the workflow can hold one record value and
// replace it, and tests can drive every transition without Temporal.
//
// | from              | event                                  | to                          |
// | (none)            | prepare                                | PREPARED                    |
// | PREPARED          | deposit, no signature yet              | OPERATION_PENDING           |
// | PREPARED          | deposit, signature already stored      | SIGNING (via OP_PENDING)    |
// | PREPARED          | valid submit                           | PREPARED (payload stored)   |
// | OPERATION_PENDING | valid submit                           | SIGNING                     |
// | PREPARED          | expiry timer                           | EXPIRED                     |
// | PREPARED          | cancel                                 | CANCELLED                   |
// | OPERATION_PENDING | cancel                                 | CANCELLED (refundDue)       |
// | CANCELLED         | cancel                                 | CANCELLED (nothing changes) |
// | SIGNING, EXPIRED  | cancel                                 | refused (409)               |
// | CANCELLED         | submit / deposit                       | refused (409; a deposit is  |
// |                   |                                        | kept in refusedDeposits)    |

export * from './execution-record';

/** What applyDeposit did. */
export type DepositOutcome =
  | 'applied'
  | 'duplicate'
  | 'refused-expired'
  | 'refused-other-tx'
  | 'refused-cancelled'
  | 'refused-below-minimum'
  | 'refused-wrong-chain'
  | 'refused-wrong-asset';

/** The reason of a refused deposit's outcome (`refused-expired`: `expired`); undefined when it was taken or is a duplicate. */
export function depositRefusalReason(outcome: DepositOutcome): RefusedDeposit['reason'] | undefined {
  return outcome === 'applied' || outcome === 'duplicate' ? undefined : (outcome.slice('refused-'.length) as RefusedDeposit['reason']);
}

/**
 * Why a deposit reported after the execution's workflow closed is owed back, judged on its final
 * record by the rule the workflow applies (applyDeposit): a refusal reason, `closed` when the record
 * would still have taken it (a run an operator terminated), or undefined when it is the execution's
 * own deposit again (nothing is owed). The API and the chain watcher both ask it.
 */
export function closedDepositRefusal(rec: ExecutionRecord, deposit: Deposit, at: string): RefusedDeposit['reason'] | 'closed' | undefined {
  const { outcome } = applyDeposit(rec, deposit, at);
  if (outcome === 'duplicate') return undefined;
  return depositRefusalReason(outcome) ?? 'closed';
}

/** Whether a submit of a given signature may be applied (see checkSubmit). */
export type SubmitCheck = 'ok' | 'duplicate' | 'expired' | 'cancelled' | 'other-signature';

/** Whether a cancel may be applied (see checkCancel). */
export type CancelCheck = 'ok' | 'duplicate' | 'signing' | 'expired';

/** What prepare fixes for good: the facts an execution starts from. */
export interface PreparedExecution {
  executionId: string;
  wallet: string;
  intent: unknown;
  intentHash: string;
  /** 0x-hex of the 32-byte ed25519 key. */
  signerPublicKey: string;
  createdAt: string;
  expiresAt: string;
  depositTarget?: DepositTarget;
}

/** The PREPARED record of a new execution. */
export function initialRecord(input: PreparedExecution): ExecutionRecord {
  const target = input.depositTarget;
  return {
    ...(target
      ? {
          depositTarget: {
            chain: target.chain,
            asset: target.asset,
            minAmount: target.minAmount,
            address: target.address,
            ...(target.refundAddress === undefined ? {} : { refundAddress: target.refundAddress }),
          },
        }
      : {}),
    executionId: input.executionId,
    wallet: input.wallet,
    status: 'PREPARED',
    intent: input.intent,
    intentHash: input.intentHash,
    signerPublicKey: input.signerPublicKey,
    createdAt: input.createdAt,
    updatedAt: input.createdAt,
    expiresAt: input.expiresAt,
    history: [{ status: 'PREPARED', at: input.createdAt }],
    refusedDeposits: [],
  };
}

/** Only the known fields, and no `undefined` ones (they do not survive a JSON round trip). */
function cleanDeposit(d: Deposit): Deposit {
  const out: Deposit = { txHash: d.txHash };
  if (d.chain !== undefined) out.chain = d.chain;
  if (d.amount !== undefined) out.amount = d.amount;
  if (d.blockNumber !== undefined) out.blockNumber = d.blockNumber;
  if (d.transferIndex !== undefined) out.transferIndex = d.transferIndex;
  if (d.asset !== undefined) out.asset = d.asset;
  return out;
}

/**
 * Whether two deposits are the same transfer: same txHash and transfer index (absent: 0), and the
 * same asset where both say one (a token's log and a native transfer of one transaction may share
 * an index).
 */
export function sameTransfer(a: Deposit, b: Pick<Deposit, 'txHash' | 'transferIndex' | 'asset'>): boolean {
  return (
    a.txHash === b.txHash &&
    (a.transferIndex ?? 0) === (b.transferIndex ?? 0) &&
    (a.asset === undefined || b.asset === undefined || a.asset.toLowerCase() === b.asset.toLowerCase())
  );
}

/**
 * Why the deposit target refuses `d`, if it does: another chain, another asset (where `d` says
 * one), or less than minAmount (or no amount it can read).
 */
function targetRefusal(target: DepositTarget | undefined, d: Deposit): 'below-minimum' | 'wrong-chain' | 'wrong-asset' | undefined {
  if (!target) return undefined;
  if (d.chain !== target.chain) return 'wrong-chain';
  if (d.asset !== undefined && d.asset.toLowerCase() !== target.asset.toLowerCase()) return 'wrong-asset';
  if (d.amount === undefined || !WEI.test(d.amount) || !atLeast(d.amount, target.minAmount)) return 'below-minimum';
  return undefined;
}

function moveTo(rec: ExecutionRecord, statuses: ExecutionStatus[], at: string): Pick<ExecutionRecord, 'status' | 'history' | 'updatedAt'> {
  return {
    status: statuses[statuses.length - 1],
    history: [...rec.history, ...statuses.map((status) => ({ status, at }))],
    updatedAt: at,
  };
}

/**
 * Applies a completed deposit at time `at`.
 * - the stored deposit's transfer again (txHash and transferIndex): `duplicate`, record unchanged;
 * - EXPIRED: `refused-expired`; CANCELLED: `refused-cancelled`; another txHash already stored:
 *   `refused-other-tx`; with a deposit target, another chain: `refused-wrong-chain`, less than its
 *   minAmount (or no decimal amount): `refused-below-minimum`, another asset: `refused-wrong-asset`. Each is appended to `refusedDeposits` (once per txHash) for a refund;
 *   status unchanged; once the record holds MAX_REFUSED_IN_RECORD of them, the record is unchanged
 *   and the refusal is answered as `overflow`, for the caller to put in the refunds ledger;
 * - PREPARED: deposit stored, `applied`; to OPERATION_PENDING, or, when a signed payload is
 *   already stored, on to SIGNING (history gets OPERATION_PENDING then SIGNING, both at `at`).
 * A deposit that changes nothing (a duplicate, or a refusal already recorded) returns `rec`
 * itself: the workflow's Update validator relies on that identity to write nothing for it.
 */
export function applyDeposit(
  rec: ExecutionRecord,
  deposit: Deposit,
  at: string,
): { record: ExecutionRecord; outcome: DepositOutcome; overflow?: RefusedDeposit } {
  if (rec.deposit !== undefined && sameTransfer(rec.deposit, deposit)) return { record: rec, outcome: 'duplicate' };
  const refusedByTarget = targetRefusal(rec.depositTarget, deposit);
  if (rec.status !== 'PREPARED' || rec.deposit !== undefined || refusedByTarget !== undefined) {
    // Only PREPARED lacks a deposit, so anything else is EXPIRED, CANCELLED or holds another txHash.
    const reason =
      rec.status === 'EXPIRED'
        ? 'expired'
        : rec.status === 'CANCELLED'
          ? 'cancelled'
          : rec.deposit !== undefined
            ? 'other-tx'
            : refusedByTarget!;
    const outcome = `refused-${reason}` as const;
    if (rec.refusedDeposits.some((r) => sameTransfer(r, deposit))) return { record: rec, outcome };
    const refused: RefusedDeposit = { ...cleanDeposit(deposit), at, reason };
    if (rec.refusedDeposits.length >= MAX_REFUSED_IN_RECORD) return { record: rec, outcome, overflow: refused };
    return { record: { ...rec, refusedDeposits: [...rec.refusedDeposits, refused], updatedAt: at }, outcome };
  }
  const path: ExecutionStatus[] = rec.signedPayload ? ['OPERATION_PENDING', 'SIGNING'] : ['OPERATION_PENDING'];
  return { record: { ...rec, deposit: cleanDeposit(deposit), ...moveTo(rec, path, at) }, outcome: 'applied' };
}

/**
 * Whether a submit carrying `signature` (canonical `0x` lowercase hex) may be applied:
 * `expired` (EXPIRED, even for a stored signature), `cancelled` (CANCELLED, likewise), `duplicate` (this signature is already
 * stored: a safe retry), `other-signature` (another one is stored), else `ok`. The workflow's
 * Update validator and the API judge a submit by it; how each refusal is answered is
 * contracts/execution-commands.ts (SUBMIT_REFUSALS).
 */
export function checkSubmit(rec: ExecutionRecord, signature: string): SubmitCheck {
  if (rec.status === 'EXPIRED') return 'expired';
  if (rec.status === 'CANCELLED') return 'cancelled';
  if (rec.signedPayload !== undefined) return rec.signedPayload.signature === signature ? 'duplicate' : 'other-signature';
  return 'ok';
}

/**
 * Applies a verified submit at time `at`: stores `payload` and the `signingMessage` that was
 * verified. PREPARED stays PREPARED; OPERATION_PENDING moves to SIGNING. A duplicate returns
 * `rec` itself.
 * @throws Error when checkSubmit refuses the submit: its callers judge first (the workflow's
 * validator), so reaching this is a bug, never an answer to a client.
 */
export function applySubmit(rec: ExecutionRecord, payload: SignedPayload, signingMessage: string, at: string): ExecutionRecord {
  const check = checkSubmit(rec, payload.signature);
  if (check === 'duplicate') return rec;
  if (check !== 'ok') throw new Error(`applySubmit: checkSubmit refuses this submit (${check}); judge it before applying it`);
  const stored: ExecutionRecord = {
    ...rec,
    signedPayload: { ...payload, connectEnvelope: { ...payload.connectEnvelope } },
    signingMessage,
    updatedAt: at,
  };
  return rec.status === 'OPERATION_PENDING' ? { ...stored, ...moveTo(rec, ['SIGNING'], at) } : stored;
}

/** The expiry timer fired at `at`: PREPARED becomes EXPIRED; any other status is kept (same `rec`). */
export function expire(rec: ExecutionRecord, at: string): ExecutionRecord {
  if (rec.status !== 'PREPARED') return rec;
  return { ...rec, ...moveTo(rec, ['EXPIRED'], at) };
}

/** Sets the signing deadline of an execution that has just reached OPERATION_PENDING. */
export function withSigningDeadline(rec: ExecutionRecord, deadline: string): ExecutionRecord {
  return rec.status === 'OPERATION_PENDING' && rec.signingDeadline === undefined ? { ...rec, signingDeadline: deadline } : rec;
}

/**
 * The signing deadline passed at `at`: OPERATION_PENDING becomes EXPIRED, its deposit marked
 * `refundDue` (owed back: the refunds ledger's reason `unsigned-by-deadline`). Any other status
 * is kept (same `rec`).
 */
export function expireUnsigned(rec: ExecutionRecord, at: string): ExecutionRecord {
  if (rec.status !== 'OPERATION_PENDING' || !rec.deposit) return rec;
  return { ...rec, ...moveTo(rec, ['EXPIRED'], at), deposit: { ...rec.deposit, refundDue: true } };
}

/**
 * Whether a cancel may be applied: `duplicate` when already CANCELLED (nothing to do), `signing`
 * or `expired` when the execution is past the point of cancelling, else `ok`. How each refusal is
 * answered is contracts/execution-commands.ts (CANCEL_REFUSALS).
 */
export function checkCancel(rec: ExecutionRecord): CancelCheck {
  if (rec.status === 'CANCELLED') return 'duplicate';
  if (rec.status === 'SIGNING') return 'signing';
  if (rec.status === 'EXPIRED') return 'expired';
  return 'ok';
}

/**
 * Cancels at time `at`: PREPARED or OPERATION_PENDING become CANCELLED; a stored deposit is
 * marked `refundDue: true`. Already CANCELLED returns `rec` itself.
 * @throws Error from SIGNING or EXPIRED (checkCancel refuses): as applySubmit, a bug of the caller.
 */
export function applyCancel(rec: ExecutionRecord, at: string): ExecutionRecord {
  const check = checkCancel(rec);
  if (check === 'duplicate') return rec;
  if (check !== 'ok') throw new Error(`applyCancel: checkCancel refuses this cancel (${check}); judge it before applying it`);
  const next: ExecutionRecord = { ...rec, ...moveTo(rec, ['CANCELLED'], at) };
  if (rec.deposit) next.deposit = { ...rec.deposit, refundDue: true };
  return next;
}

/**
 * The chain watcher found the block of a signalled deposit reorganised away, at time `at`: the
 * stored deposit (or the refused one) of that transfer is marked `reorged: true`; no status
 * changes. A transfer the record does not hold, or one already marked, returns `rec` itself.
 */
export function markReorged(
  rec: ExecutionRecord,
  transfer: Pick<Deposit, 'txHash' | 'transferIndex' | 'asset'>,
  at: string,
): ExecutionRecord {
  return setReorged(rec, transfer, true, at);
}

/**
 * The chain watcher found a transfer marked `reorged` mined again and confirmed, at time `at`: the
 * mark is cleared. A transfer the record does not hold marked returns `rec` itself.
 */
export function markReincluded(
  rec: ExecutionRecord,
  transfer: Pick<Deposit, 'txHash' | 'transferIndex' | 'asset'>,
  at: string,
): ExecutionRecord {
  return setReorged(rec, transfer, false, at);
}

/** The number of times the chain's word on a deposit changed; a mark from before the count was kept is one. */
const reorgsOf = (d: { reorged?: true; reorgs?: number }) => d.reorgs ?? (d.reorged ? 1 : 0);

function setReorged(
  rec: ExecutionRecord,
  transfer: Pick<Deposit, 'txHash' | 'transferIndex' | 'asset'>,
  reorged: boolean,
  at: string,
): ExecutionRecord {
  const flip = <D extends StoredDeposit | RefusedDeposit>(d: D): D => {
    const { reorged: _was, ...rest } = d;
    return { ...rest, ...(reorged ? { reorged: true as const } : {}), reorgs: reorgsOf(d) + 1 } as D;
  };
  if (rec.deposit !== undefined && sameTransfer(rec.deposit, transfer)) {
    if (Boolean(rec.deposit.reorged) === reorged) return rec;
    return { ...rec, deposit: flip(rec.deposit), updatedAt: at };
  }
  const i = rec.refusedDeposits.findIndex((r) => sameTransfer(r, transfer) && Boolean(r.reorged) !== reorged);
  if (i < 0) return rec;
  const refusedDeposits = rec.refusedDeposits.map((r, j) => (j === i ? flip(r) : r));
  return { ...rec, refusedDeposits, updatedAt: at };
}

/**
 * Whether the record holds transfer `d` (as its deposit or a refused one) and the chain has not
 * since taken it away: a claim of it again changes nothing and needs no proof.
 */
export function holds(rec: ExecutionRecord, d: Pick<Deposit, 'txHash' | 'transferIndex' | 'asset'>): boolean {
  const held = (x: StoredDeposit | RefusedDeposit) => sameTransfer(x, d) && !x.reorged;
  return (rec.deposit !== undefined && held(rec.deposit)) || rec.refusedDeposits.some(held);
}

/**
 * Records at `at` that the chain refutes a claimed deposit (`reason`: the proof's); once per
 * transfer, at most MAX_REFUTED_IN_RECORD of them (later ones return `rec` itself).
 */
export function refuteClaim(rec: ExecutionRecord, d: Deposit, reason: string, at: string): ExecutionRecord {
  const claims = rec.refutedClaims ?? [];
  if (claims.length >= MAX_REFUTED_IN_RECORD || claims.some((c) => sameTransfer(c, d))) return rec;
  const claim: RefutedClaim = {
    txHash: d.txHash,
    ...(d.transferIndex === undefined ? {} : { transferIndex: d.transferIndex }),
    ...(d.asset === undefined ? {} : { asset: d.asset }),
    reason,
    at,
  };
  return { ...rec, refutedClaims: [...claims, claim], updatedAt: at };
}

/**
 * The record's version: it grows by at least one with every change the state machine makes (a
 * status change adds a history entry, a stored signature, a refused deposit or a reorg mark adds its own), and
 * is equal for equal records. The read model keeps the row of the highest version it was sent,
 * so writes that are retried, replayed or arrive out of order leave the newest record.
 */
/**
 * Who writes a record an Update made into the read model: the Update's caller, from the answer
 * (the API before it answers its client), unless the record owes money back (a refused deposit, a
 * deposit due back after a cancel), whose refunds ledger rows the worker writes together with the
 * record. The workflow writes every other change itself (signals, timers, refusals), and a record
 * a caller never wrote is found by the worker's catch-up (docs/decisions/0073).
 */
export const callerWritesRecord = (record: ExecutionRecord): boolean => record.refusedDeposits.length === 0 && !record.deposit?.refundDue;

export function recordVersion(rec: ExecutionRecord): number {
  const reorged = (rec.deposit ? reorgsOf(rec.deposit) : 0) + rec.refusedDeposits.reduce((n, r) => n + reorgsOf(r), 0);
  return rec.history.length + rec.refusedDeposits.length + (rec.refutedClaims?.length ?? 0) + (rec.signedPayload ? 1 : 0) + reorged;
}
