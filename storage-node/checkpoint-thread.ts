/**
 * The storage node's background writes, on a thread of their own: writing the logged deliveries'
 * entries and audit rows into the data file (a few indexed rows per change), then copying its
 * WAL into it and syncing it (tens to hundreds of milliseconds), would otherwise hold up every
 * request that arrives meanwhile. Once a round, with its own connections to the node's two files,
 * the thread writes what the log holds (DeliveryWriter: the store, before a read, may do the same;
 * the file's mark keeps either from writing a delivery twice) and checkpoints: PASSIVE, so that
 * the answering thread's log commits never wait for it, except when the data file's WAL has not
 * been copied whole for FULL_AFTER rounds: then one FULL checkpoint makes the writers wait, so
 * that the WAL stays bounded under sustained load. It tells the answering thread which
 * deliveries the file now holds (NodeStore.writtenThrough) and which it holds durably, so that
 * the log can forget them (NodeStore.forgetThrough).
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { DeliveryWriter } from './delivery-writer';
import { DATABASE_FILE, DELIVERY_LOG_FILE, openNodeFile } from './node-files';

/** Incomplete PASSIVE rounds in a row after which the next checkpoint waits for the writers. */
const FULL_AFTER = 5;

interface ThreadData {
  dataDir: string;
  intervalMs: number;
  keptChanges: number;
}

/** What the thread tells its owner. */
type ThreadMessage = { written: number } | { durable: number } | { error: string };

/** The thread's side: checkpoints both files every `intervalMs`, until the owner terminates it. */
function runThread({ dataDir, intervalMs, keptChanges }: ThreadData): void {
  const port = parentPort!;
  // NORMAL is per connection: a checkpoint by this connection syncs the data file (OFF would not).
  const data = openNodeFile(dataDir, DATABASE_FILE, 'NORMAL');
  const log = openNodeFile(dataDir, DELIVERY_LOG_FILE, 'FULL');
  const writer = new DeliveryWriter(data, log, keptChanges);
  let incomplete = 0;
  let written = -1;
  const timer = setInterval(() => {
    try {
      const now = writer.writeLogged();
      if (now !== written) port.postMessage({ written: now } satisfies ThreadMessage);
      written = now;
      const durable = writer.checkpoint(incomplete >= FULL_AFTER ? 'FULL' : 'PASSIVE');
      incomplete = durable === undefined ? incomplete + 1 : 0;
      if (durable !== undefined) port.postMessage({ durable } satisfies ThreadMessage);
      log.pragma('wal_checkpoint(PASSIVE)');
    } catch (err) {
      port.postMessage({ error: (err as Error).message } satisfies ThreadMessage);
    }
  }, intervalMs);
  // Asked to stop: no round is running (rounds are synchronous), so the connections close clean.
  port.once('message', () => {
    clearInterval(timer);
    data.close();
    log.close();
    port.close();
  });
}

if (!isMainThread && (workerData as { checkpointThread?: ThreadData } | undefined)?.checkpointThread) {
  runThread((workerData as { checkpointThread: ThreadData }).checkpointThread);
}

export interface CheckpointThread {
  /** Stops the thread after the round it is running, if any, and resolves once it has exited. */
  stop(): Promise<void>;
}

/**
 * Starts the checkpoint thread of the store in `dataDir`. `onWritten` is told, on this thread,
 * the newest delivery the data file holds after each round that wrote; `onDurable` the newest
 * one each complete checkpoint made durable; `onError` of a failed round (the
 * next round tries again) or of a thread that died (it is started again after `intervalMs`).
 */
export function startCheckpointThread(options: {
  dataDir: string;
  intervalMs: number;
  keptChanges: number;
  onWritten: (seq: number) => void;
  onDurable: (seq: number) => void;
  onError: (err: Error) => void;
}): CheckpointThread {
  let worker: Worker | undefined;
  let restart: NodeJS.Timeout | undefined;
  let stopped = false;
  const start = () => {
    const thread = new Worker(__filename, {
      workerData: { checkpointThread: { dataDir: options.dataDir, intervalMs: options.intervalMs, keptChanges: options.keptChanges } },
    });
    thread.unref();
    thread.on('message', (message: ThreadMessage) => {
      if ('written' in message) options.onWritten(message.written);
      else if ('durable' in message) options.onDurable(message.durable);
      else options.onError(new Error(`checkpoint failed: ${message.error}`));
    });
    thread.on('error', (err) => options.onError(new Error(`checkpoint thread died: ${err.message}`)));
    thread.on('exit', () => {
      if (stopped || worker !== thread) return;
      worker = undefined;
      restart = setTimeout(start, options.intervalMs);
      restart.unref();
    });
    worker = thread;
  };
  start();
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(restart);
      const thread = worker;
      worker = undefined;
      if (!thread) return;
      const exited = new Promise((resolve) => thread.once('exit', resolve));
      thread.postMessage('stop');
      await exited;
    },
  };
}
