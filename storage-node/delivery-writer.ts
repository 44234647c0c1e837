import type SqliteDatabase from 'better-sqlite3';
import { applyChange, covers, emptyHistory, isPresent, mergeHistories, revertChange, type EntryHistory } from '../domain/entry-order';
import type { ApplyRequest, ApplyResponse, OpType, RepairEntry, WhitelistKind } from '../contracts/storage-node-protocol';

/** How a checkpoint treats writers: PASSIVE never waits for them, FULL makes them wait until it is done. */
export type CheckpointMode = 'PASSIVE' | 'FULL' | 'TRUNCATE';

interface EntryKeyRow {
  kind: string;
  entry: string;
  history: string;
}

/** An entry's key in the maps of histories: its whitelist and its exact text. */
export const entryKey = (kind: string, entry: string) => `${kind}\n${entry}`;

/**
 * A delivery as the log keeps it: the request (a batch's share, or other replicas' histories to
 * merge) and when it was answered. What it did follows from these.
 */
export type LoggedDelivery = { request: ApplyRequest; appliedAt: string } | { repair: RepairEntry[]; appliedAt: string };

/** The [kind, entry] pairs a logged delivery touches. */
export const touched = (delivery: LoggedDelivery): Array<{ kind: string; entry: string }> =>
  'repair' in delivery ? delivery.repair : delivery.request.changes;

/**
 * What a repair does: each entry's history merged with the one given (domain/entry-order.ts
 * mergeHistories), from the histories before it (`histories`, updated in place). It writes no audit
 * row: the trail keeps what a node applied from a batch, and the batch's other replicas have it.
 */
export function repairEntries(
  entries: readonly RepairEntry[],
  histories: Map<string, EntryHistory>,
  keptChanges: number,
): { repaired: number; changed: Map<string, ChangedEntry> } {
  const changed = new Map<string, ChangedEntry>();
  for (const { kind, entry, history: theirs } of entries) {
    const k = entryKey(kind, entry);
    const before = histories.get(k) ?? emptyHistory();
    if (covers(before, theirs)) continue;
    const history = mergeHistories(before, theirs, keptChanges);
    histories.set(k, history);
    changed.set(k, { kind, entry, history });
  }
  return { repaired: changed.size, changed };
}

/** An entry whose history a delivery changed. */
interface ChangedEntry {
  kind: WhitelistKind;
  entry: string;
  history: EntryHistory;
}

/** An audit row of a delivery: index, op_type, kind, entry, changed, superseded. */
type AuditedChange = [number, OpType, WhitelistKind, string, number, number];

/**
 * What one delivery does, from the histories of its entries before it (`histories`, updated in
 * place): each change takes its place in its entry's order (entry-order.ts) and gets an audit row
 * (a repeat of a delivery gets none). Pure, so that the answer given at delivery and the rows
 * written later from the log are the same.
 */
export function deliver(
  request: ApplyRequest,
  histories: Map<string, EntryHistory>,
  keptChanges: number,
): { response: ApplyResponse; changed: Map<string, ChangedEntry>; audit: AuditedChange[] } {
  const step = request.revert ? revertChange : applyChange;
  const changed = new Map<string, ChangedEntry>();
  const audit: AuditedChange[] = [];
  const results = request.changes.map((change, index) => {
    const k = entryKey(change.kind, change.entry);
    const before = histories.get(k) ?? emptyHistory();
    const order = { position: request.position, batchId: request.batchId, index: request.indexes?.[index] ?? index };
    const { history, verdict, repeat } = step(before, order, change.op_type, keptChanges);
    if (history !== before) {
      // A later change to the same entry in this delivery sees this one.
      histories.set(k, history);
      changed.set(k, { kind: change.kind, entry: change.entry, history });
    }
    // A repeat did nothing new: the trail already holds its first delivery.
    if (!repeat) audit.push([order.index, change.op_type, change.kind, change.entry, verdict.changed ? 1 : 0, verdict.superseded ? 1 : 0]);
    return { op_type: change.op_type, kind: change.kind, entry: change.entry, changed: verdict.changed, superseded: verdict.superseded };
  });
  return { response: { batchId: request.batchId, results }, changed, audit };
}

/**
 * Writes logged deliveries into the data file, from one pair of connections to the node's two
 * files: the store's own, or the checkpoint thread's. Each call writes, in one transaction, every
 * delivery the log holds after the file's `written` mark, in order, and moves the mark; so two
 * writers (the thread in the background, the store before a read) never write one twice, and what
 * a crash interrupted is written by the next call.
 */
export class DeliveryWriter {
  private readonly statements;

  constructor(
    private readonly db: SqliteDatabase.Database,
    log: SqliteDatabase.Database,
    private readonly keptChanges: number,
  ) {
    this.statements = {
      // A share's entries are read with one statement (their keys passed as JSON); rows are
      // written one prepared statement each, which measured faster than unpacking JSON in SQL.
      entries: db.prepare<[string], EntryKeyRow>(
        "SELECT kind, entry, history FROM entries WHERE (kind, entry) IN (SELECT value ->> '$[0]', value ->> '$[1]' FROM json_each(?))",
      ),
      saveEntry: db.prepare<[string, string, number, string, string]>(
        'INSERT INTO entries (kind, entry, present, sort_key, history) VALUES (?, ?, ?, ?, ?) ' +
          'ON CONFLICT (kind, entry) DO UPDATE SET present = excluded.present, history = excluded.history',
      ),
      audit: db.prepare<[number, number, string, number, number, string, string, string, number, number, string | null, string]>(
        'INSERT INTO audit (seq, idx, batch_id, position, revert, op_type, kind, entry, changed, superseded, token_id, applied_at) ' +
          'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      written: db.prepare<[], number>("SELECT value FROM meta WHERE key = 'written'").pluck(),
      setWritten: db.prepare<[number]>(
        "INSERT INTO meta (key, value) VALUES ('written', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      ),
      loggedAfter: log.prepare<[number], { seq: number; delivery: string }>(
        'SELECT seq, delivery FROM deliveries WHERE seq > ? ORDER BY seq',
      ),
    };
  }

  /** The newest delivery the data file holds. */
  written(): number {
    return (this.statements.written.get() as number | undefined) ?? 0;
  }

  /** The histories the data file holds for `keys` ([kind, entry] pairs), into `into`. */
  readHistories(keys: Array<[string, string]>, into: Map<string, EntryHistory>): void {
    if (keys.length === 0) return;
    for (const row of this.statements.entries.all(JSON.stringify(keys)))
      into.set(entryKey(row.kind, row.entry), JSON.parse(row.history) as EntryHistory);
  }

  /**
   * Copies the data file's WAL into it and syncs it. Returns the newest delivery the file now
   * holds durably, or undefined when part of the WAL could not be copied (a reader or, in PASSIVE
   * mode, a writer was in the way); the mark is read before the copy starts, so whatever
   * committed it is in the copied part.
   */
  checkpoint(mode: CheckpointMode): number | undefined {
    const written = this.written();
    const [{ busy, log: walFrames, checkpointed }] = this.db.pragma(`wal_checkpoint(${mode})`) as Array<{
      busy: number;
      log: number;
      checkpointed: number;
    }>;
    return busy === 0 && checkpointed === walFrames ? written : undefined;
  }

  /** Writes what the log holds after the `written` mark; returns the new mark. */
  writeLogged(): number {
    return this.db
      .transaction(() => {
        const written = this.written();
        const rows = this.statements.loggedAfter.all(written);
        if (rows.length === 0) return written;
        // Every entry these deliveries touch, as the last of them left it: written once.
        const histories = new Map<string, EntryHistory>();
        const changed = new Map<string, ChangedEntry>();
        for (const row of rows) {
          const logged = JSON.parse(row.delivery) as LoggedDelivery;
          this.readHistories(
            touched(logged)
              .filter((c) => !histories.has(entryKey(c.kind, c.entry)))
              .map((c) => [c.kind, c.entry]),
            histories,
          );
          if ('repair' in logged) {
            for (const [k, entry] of repairEntries(logged.repair, histories, this.keptChanges).changed) changed.set(k, entry);
            continue;
          }
          const { request, appliedAt } = logged;
          const delivered = deliver(request, histories, this.keptChanges);
          for (const [k, entry] of delivered.changed) changed.set(k, entry);
          for (const [index, opType, kind, entry, isChanged, superseded] of delivered.audit)
            this.statements.audit.run(
              row.seq,
              index,
              request.batchId,
              request.position,
              request.revert ? 1 : 0,
              opType,
              kind,
              entry,
              isChanged,
              superseded,
              request.tokenId ?? null,
              appliedAt,
            );
        }
        for (const { kind, entry, history } of changed.values())
          this.statements.saveEntry.run(kind, entry, isPresent(history) ? 1 : 0, entry.toLowerCase(), JSON.stringify(history));
        const last = rows[rows.length - 1].seq;
        this.statements.setWritten.run(last);
        return last;
      })
      .immediate();
  }
}
