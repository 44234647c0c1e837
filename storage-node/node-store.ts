import { randomInt } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type SqliteDatabase from 'better-sqlite3';
import { fsyncDirectory } from '../lib/durable-fs';
import { DEFAULT_KEPT_CHANGES, emptyHistory, isPresent, type EntryHistory } from '../domain/entry-order';
import type {
  ApplyRequest,
  ApplyResponse,
  AuditRecord,
  AuditResponse,
  ListResponse,
  OpType,
  RepairEntry,
  RepairResponse,
  ReplicaState,
  WhitelistKind,
} from '../contracts/storage-node-protocol';
import { deliver, DeliveryWriter, entryKey, repairEntries, type LoggedDelivery } from './delivery-writer';
import { DATA_FILE_SCHEMA, DATABASE_FILE, DELIVERY_LOG_FILE, DELIVERY_LOG_SCHEMA, openNodeFile } from './node-files';
import type { AuditSelection } from './validate';

export interface NodeStoreOptions {
  dataDir: string;
  /** How many changes each entry keeps for ordering late deliveries and reverts (entry-order.ts). */
  keptChanges?: number;
}

interface EntryRow {
  history: string;
}

interface AuditRow {
  seq: number;
  idx: number;
  batch_id: string;
  position: number;
  revert: number;
  op_type: OpType;
  kind: WhitelistKind;
  entry: string;
  changed: number;
  superseded: number;
  token_id: string | null;
  applied_at: string;
}

const toAuditRecord = (row: AuditRow): AuditRecord => ({
  seq: row.seq,
  index: row.idx,
  batchId: row.batch_id,
  position: row.position,
  revert: row.revert === 1,
  op_type: row.op_type,
  kind: row.kind,
  entry: row.entry,
  changed: row.changed === 1,
  superseded: row.superseded === 1,
  ...(row.token_id === null ? {} : { tokenId: row.token_id }),
  appliedAt: row.applied_at,
});

/**
 * The durable whitelists of one node in two SQLite files. A delivery is answered once its one row
 * in the delivery log is committed (synchronous=FULL: fsynced), so an acknowledged change
 * survives a crash or power loss. Its entries and audit rows are written into the data file
 * later, from the log, by the checkpoint thread (checkpoint-thread.ts) or before a read, and at
 * the next open if the process died first; meanwhile the store answers from its overlay of the
 * entries those deliveries changed. Opening replays only what the log holds after the data file's
 * mark, whatever the size of the audit trail.
 */
export class NodeStore {
  private readonly keptChanges: number;
  private seq: number;
  private readonly writer: DeliveryWriter;
  private readonly statements;
  /** Entries changed by deliveries the data file may not hold yet, with the newest such delivery. */
  private readonly overlay = new Map<string, { history: EntryHistory; seq: number }>();
  /** The newest delivery the data file is known to hold. */
  private written: number;
  /** This data folder's incarnation and whether a repair pass has refilled it (contracts: ReplicaState). */
  private replicaState: ReplicaState;

  private constructor(
    private readonly db: SqliteDatabase.Database,
    private readonly log: SqliteDatabase.Database,
    keptChanges: number,
  ) {
    this.keptChanges = keptChanges;
    this.writer = new DeliveryWriter(db, log, keptChanges);
    this.statements = {
      entry: db.prepare<[string, string], EntryRow>('SELECT history FROM entries WHERE kind = ? AND entry = ?'),
      logDelivery: log.prepare<[number, string]>('INSERT INTO deliveries (seq, delivery) VALUES (?, ?)'),
      forgetDeliveries: log.prepare<[number]>('DELETE FROM deliveries WHERE seq <= ?'),
      allPage: db.prepare<[string, string, string, string, number], { entry: string; history: string }>(
        'SELECT entry, history FROM entries WHERE kind = ? AND ' +
          '(sort_key > ? OR (sort_key = ? AND entry > ?)) ORDER BY sort_key, entry LIMIT ?',
      ),
      page: db.prepare<[string, string, string, string, number], { entry: string }>(
        'SELECT entry FROM entries WHERE kind = ? AND present = 1 AND ' +
          '(sort_key > ? OR (sort_key = ? AND entry > ?)) ORDER BY sort_key, entry LIMIT ?',
      ),
    };
    // Deliveries acknowledged before a crash or power loss but not in the data file: written out now.
    this.written = this.writer.writeLogged();
    const maxSeq = (d: SqliteDatabase.Database, table: string) =>
      (d.prepare(`SELECT max(seq) FROM ${table}`).pluck().get() as number | null) ?? 0;
    // The mark too: the newest delivery may have left no audit row (a repeat) and no log row (forgotten).
    this.seq = Math.max(this.written, maxSeq(db, 'audit'), maxSeq(log, 'deliveries'));
    this.replicaState = this.openIncarnation();
  }

  /**
   * The data folder's incarnation, made when the node first opens it: a folder that already held
   * entries (from before incarnations) counts as refilled; an empty one does not, until a repair
   * pass says so (decision 0094).
   */
  private openIncarnation(): ReplicaState {
    const read = (key: string) => this.db.prepare<[string], number>('SELECT value FROM meta WHERE key = ?').pluck().get(key);
    const incarnation = read('incarnation');
    if (incarnation !== undefined) return { incarnation, refilled: read('refilled') === 1 };
    const held = this.db.prepare('SELECT 1 FROM entries LIMIT 1').get() !== undefined || this.seq > 0;
    const fresh = { incarnation: randomInt(1, 2 ** 47), refilled: held };
    this.db.transaction(() => {
      this.setMeta('incarnation', fresh.incarnation);
      this.setMeta('refilled', held ? 1 : 0);
    })();
    return fresh;
  }

  private setMeta(key: string, value: number): void {
    this.db
      .prepare<[string, number]>('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
      .run(key, value);
  }

  /** This data folder's incarnation and whether it has been refilled. */
  replica(): ReplicaState {
    return { ...this.replicaState };
  }

  /** A full repair pass filled `incarnation`: marked refilled if it is still this folder's (a node wiped since is not). */
  markRefilled(incarnation: number): void {
    if (incarnation !== this.replicaState.incarnation || this.replicaState.refilled) return;
    this.setMeta('refilled', 1);
    this.replicaState = { incarnation, refilled: true };
  }

  /** Opens (creating if needed) the store in `dataDir`. */
  static open(options: NodeStoreOptions): NodeStore {
    if (!fs.existsSync(options.dataDir)) {
      fs.mkdirSync(options.dataDir, { recursive: true });
      // The new directory's own name must be durable too, or a power loss could lose it whole.
      fsyncDirectory(path.dirname(options.dataDir));
    }
    // The log is fsynced at each delivery and holds about a second of them; the data file is
    // synced only by checkpoints (synchronous=NORMAL in WAL mode), after which the log forgets
    // what the file holds.
    const log = openNodeFile(options.dataDir, DELIVERY_LOG_FILE, 'FULL');
    log.exec(DELIVERY_LOG_SCHEMA);
    const db = openNodeFile(options.dataDir, DATABASE_FILE, 'NORMAL');
    db.exec(DATA_FILE_SCHEMA);
    return new NodeStore(db, log, options.keptChanges ?? DEFAULT_KEPT_CHANGES);
  }

  /**
   * Delivers one node share (or its revert) and answers what each change did. The delivery is
   * committed as one log row before this returns. Throws when the log cannot be written; nothing
   * is applied then.
   */
  apply(request: ApplyRequest): ApplyResponse {
    const seq = this.seq + 1;
    const histories = this.historiesOf(request.changes);
    const { response, changed } = deliver(request, histories, this.keptChanges);
    const logged: LoggedDelivery = { request, appliedAt: new Date().toISOString() };
    this.statements.logDelivery.run(seq, JSON.stringify(logged));
    this.seq = seq;
    for (const [k, { history }] of changed) this.overlay.set(k, { history, seq });
    return response;
  }

  /**
   * Merges other replicas' histories of entries into this node's (a repair), committed as one log
   * row before this returns; answers how many entries it changed. An entry already holding
   * everything given costs nothing, and a repair that changes nothing is not logged.
   */
  repair(entries: readonly RepairEntry[]): RepairResponse {
    const histories = this.historiesOf(entries);
    const { repaired, changed } = repairEntries(entries, histories, this.keptChanges);
    if (repaired === 0) return { repaired };
    const seq = this.seq + 1;
    const logged: LoggedDelivery = { repair: [...entries], appliedAt: new Date().toISOString() };
    this.statements.logDelivery.run(seq, JSON.stringify(logged));
    this.seq = seq;
    for (const [k, { history }] of changed) this.overlay.set(k, { history, seq });
    return { repaired };
  }

  /** The current histories of `entries`: from a delivery the data file may not hold yet, else from the file. */
  private historiesOf(entries: ReadonlyArray<{ kind: string; entry: string }>): Map<string, EntryHistory> {
    const histories = new Map<string, EntryHistory>();
    const unread: Array<[string, string]> = [];
    for (const { kind, entry } of entries) {
      const pending = this.overlay.get(entryKey(kind, entry));
      if (pending) histories.set(entryKey(kind, entry), pending.history);
      else unread.push([kind, entry]);
    }
    this.writer.readHistories(unread, histories);
    return histories;
  }

  /** The entry's history on this node (empty when it has none). */
  history(kind: WhitelistKind, entry: string): EntryHistory {
    return this.historiesOf([{ kind, entry }]).get(entryKey(kind, entry)) ?? emptyHistory();
  }

  /**
   * One page of every entry the node has a history for, removed ones included (their tombstones),
   * with its history: what a repair compares.
   */
  historyPage(kind: WhitelistKind, after: string | undefined, limit: number): ListResponse {
    this.materialize();
    const from = after ?? '';
    const rows = this.statements.allPage.all(kind, from.toLowerCase(), from.toLowerCase(), from, limit + 1);
    const page = rows.slice(0, limit);
    const entries = page.map((r) => r.entry);
    return {
      kind,
      entries,
      histories: page.map((r) => JSON.parse(r.history) as EntryHistory),
      replica: this.replica(),
      ...(rows.length > limit ? { next: entries[entries.length - 1] } : {}),
    };
  }

  /** Writes into the data file what the log holds beyond it (reads call it first, so they see every acknowledged delivery). */
  materialize(): void {
    this.writtenThrough(this.writer.writeLogged());
  }

  /** The data file holds every delivery up to `seq` (written here or by the checkpoint thread): the overlay drops them. */
  writtenThrough(seq: number): void {
    if (seq <= this.written) return;
    this.written = seq;
    for (const [k, { seq: last }] of this.overlay) if (last <= seq) this.overlay.delete(k);
  }

  /** One page of a whitelist: at most `limit` entries after `after` (compareEntries order). */
  listPage(kind: WhitelistKind, after: string | undefined, limit: number): ListResponse {
    this.materialize();
    const from = after ?? '';
    const rows = this.statements.page.all(kind, from.toLowerCase(), from.toLowerCase(), from, limit + 1);
    const entries = rows.slice(0, limit).map((r) => r.entry);
    return { kind, entries, ...(rows.length > limit ? { next: entries[entries.length - 1] } : {}) };
  }

  /** Whether `entry` (exactly this text) is on the whitelist. */
  has(kind: WhitelistKind, entry: string): boolean {
    const pending = this.overlay.get(entryKey(kind, entry));
    if (pending) return isPresent(pending.history);
    const row = this.statements.entry.get(kind, entry);
    return row !== undefined && isPresent(JSON.parse(row.history) as EntryHistory);
  }

  /** One page of the audit trail, newest first, read through an index. */
  auditPage(selection: AuditSelection): AuditResponse {
    this.materialize();
    const where: string[] = [];
    const params: Array<string | number> = [];
    const filter = (clause: string, ...values: Array<string | number>) => {
      where.push(clause);
      params.push(...values);
    };
    if (selection.kind !== undefined) filter('kind = ?', selection.kind);
    if (selection.entry !== undefined) filter('entry = ?', selection.entry);
    if (selection.tokenId !== undefined) filter('token_id = ?', selection.tokenId);
    // Normalised so that text order is time order (toISOString's fixed width).
    if (selection.since !== undefined) filter('applied_at >= ?', new Date(selection.since).toISOString());
    const { before, byChange } = selection;
    if (before !== undefined) filter('(seq < ? OR (seq = ? AND idx < ?))', before.seq, before.seq, before.index);
    const after = byChange?.before;
    if (after !== undefined)
      filter('(position, batch_id, revert, idx) < (?, ?, ?, ?)', after.position, after.batchId, after.revert, after.index);
    const order = byChange ? 'position DESC, batch_id DESC, revert DESC, idx DESC' : 'seq DESC, idx DESC';
    const sql = `SELECT * FROM audit ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ${order} LIMIT ?`;
    const rows = this.db.prepare<Array<string | number>, AuditRow>(sql).all(...params, selection.limit + 1);
    const records = rows.slice(0, selection.limit).map(toAuditRecord);
    const last = records.at(-1);
    return { records, ...(rows.length > selection.limit && last ? { next: `${last.seq}:${last.index}` } : {}) };
  }

  /**
   * Writes out what the log holds, copies the data file's WAL into it and syncs it; then the log
   * forgets every delivery the file now holds. On this thread, so only where an answer may wait
   * (close, tests); a running node checkpoints on its checkpoint thread and calls forgetThrough().
   */
  checkpoint(): void {
    if (!this.db.open) return;
    this.materialize();
    const durable = this.writer.checkpoint('TRUNCATE');
    if (durable !== undefined) {
      this.forgetThrough(durable);
      this.log.pragma('wal_checkpoint(TRUNCATE)');
    }
  }

  /**
   * Forgets the logged deliveries up to `seq`, which a checkpoint made durable in the data file.
   * This delete need not be durable itself: the next open replays only what comes after the
   * file's own `written` mark.
   */
  forgetThrough(seq: number): void {
    if (!this.log.open) return;
    this.statements.forgetDeliveries.run(seq);
  }

  /** Closes the database; later calls throw. */
  close(): void {
    if (!this.db.open) return;
    this.checkpoint();
    this.db.close();
    this.log.close();
  }
}
