import { Connection } from '@temporalio/client';

/**
 * Polls a Temporal frontend that is starting until `probe` succeeds on a fresh connection (each try
 * bounded: 1 s to connect, 2 s for the call). Throws when `gaveUp()` says the server process has
 * exited, or after `timeoutMs` with the last error.
 */
export async function waitForTemporal(
  address: string,
  probe: (connection: Connection) => Promise<unknown>,
  options: { timeoutMs: number; intervalMs: number; gaveUp?: () => boolean; what: string },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (options.gaveUp?.()) throw new Error(`${options.what} exited before it was ready`);
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address, connectTimeout: 1000 });
      const c = connection;
      await c.withDeadline(Date.now() + 2000, () => probe(c));
      return;
    } catch (err) {
      lastError = err;
    } finally {
      await connection?.close().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs));
  }
  throw new Error(`${options.what} at ${address} not ready after ${options.timeoutMs} ms: ${(lastError as Error)?.message}`);
}
