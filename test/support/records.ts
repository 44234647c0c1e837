import { applyCancel, applyDeposit, initialRecord, type DepositTarget, type ExecutionRecord } from '../../domain/execution-state';

/**
 * `count` execution records of one wallet, built with the real state machine: createdAt shared by
 * groups of `perInstant` (so the executionId tie-break is exercised), statuses spread over
 * PREPARED, OPERATION_PENDING and CANCELLED.
 */
export function walletRecords(wallet: string, count: number, options: { perInstant?: number; start?: number } = {}): ExecutionRecord[] {
  const perInstant = options.perInstant ?? 7;
  const start = options.start ?? Date.parse('2026-01-01T00:00:00.000Z');
  const records: ExecutionRecord[] = [];
  for (let i = 0; i < count; i++) {
    const createdAt = new Date(start + Math.floor(i / perInstant) * 1000).toISOString();
    let rec = initialRecord({
      executionId: `ex-${String(i).padStart(5, '0')}-${(i * 7919) % 1000}`,
      wallet,
      intent: { n: i },
      intentHash: 'ab'.repeat(32),
      signerPublicKey: `0x${'cd'.repeat(32)}`,
      createdAt,
      expiresAt: new Date(Date.parse(createdAt) + 3_600_000).toISOString(),
    });
    if (i % 3 === 1) rec = applyDeposit(rec, { txHash: `0x${i}` }, createdAt).record;
    if (i % 3 === 2) rec = applyCancel(rec, createdAt);
    records.push(rec);
  }
  return records;
}

/** Newest first, as the list route orders: createdAt, then executionId, both descending, bytewise. */
export function newestFirst(records: ExecutionRecord[]): ExecutionRecord[] {
  const key = (r: ExecutionRecord) => [r.createdAt, r.executionId] as const;
  return [...records].sort((a, b) => {
    const [ca, ia] = key(a);
    const [cb, ib] = key(b);
    if (ca !== cb) return ca < cb ? 1 : -1;
    return ia < ib ? 1 : ia > ib ? -1 : 0;
  });
}

/** A PREPARED record of execution `executionId` (wallet `w`, an empty intent, and `depositTarget` if given), for tests of the pure functions. */
export function preparedRecord(executionId: string, depositTarget?: DepositTarget): ExecutionRecord {
  return initialRecord({
    ...(depositTarget ? { depositTarget } : {}),
    executionId,
    wallet: 'w',
    intent: {},
    intentHash: '0x00',
    signerPublicKey: '0x' + '11'.repeat(32),
    createdAt: '2026-01-01T00:00:00.000Z',
    expiresAt: '2026-01-02T00:00:00.000Z',
  });
}
