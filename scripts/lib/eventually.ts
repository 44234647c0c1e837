/** Polls `fn` until it returns a truthy value or `timeoutMs` passes (for eventually consistent reads). */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, timeoutMs = 10_000, stepMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined | false;
  while (Date.now() < deadline) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
}
