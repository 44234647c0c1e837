import type { IncomingMessage } from 'node:http';

/**
 * Reads an HTTP answer's whole body: its JSON value, the text itself when it is not JSON, or
 * undefined when it is empty. Rejects if the response stream fails. (The bench's and the load
 * test's node:http clients: lighter than fetch on a machine they share with what they measure.)
 */
export function readAnswer(res: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(text ? JSON.parse(text) : undefined);
      } catch {
        resolve(text);
      }
    });
    res.on('error', reject);
  });
}
