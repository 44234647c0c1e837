import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { Webhook } from 'standardwebhooks';

/**
 * A webhook receiver as a customer would run one, as its own process:
 * `node dist/test/support/webhook-receiver.js --port P --secret whsec_… --out FILE`.
 * It verifies every request the Standard Webhooks way (signature and timestamp tolerance) and
 * answers 401 to a bad one; each verified delivery (repeats included) is appended to FILE as one
 * JSON line `{ id, attemptAt, traceparent, event }` (`traceparent`: the W3C header as it came, or
 * null), and answered 204. Dedupe by id is the reader's job, as it
 * is a real receiver's.
 */
const { values } = parseArgs({ options: { port: { type: 'string' }, secret: { type: 'string' }, out: { type: 'string' } } });
const webhook = new Webhook(values.secret!);
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = {
      'webhook-id': String(req.headers['webhook-id'] ?? ''),
      'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
      'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
    };
    let event: unknown;
    try {
      event = webhook.verify(body, headers);
    } catch (err) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end(`rejected: ${(err as Error).message}`);
      return;
    }
    const traceparent = req.headers.traceparent ?? null;
    appendFileSync(
      values.out!,
      JSON.stringify({ id: headers['webhook-id'], attemptAt: new Date().toISOString(), traceparent, event }) + '\n',
    );
    res.writeHead(204).end();
  });
});
server.listen(Number(values.port), '127.0.0.1', () => console.log(`webhook receiver listening on ${values.port}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
