import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { postWebhook } from '../../activities/webhooks';
const MAX_WEBHOOK_ANSWER_BYTES = 4096;
import type { WebhookDelivery } from '../../contracts/webhooks';

// One webhook delivery (activities/webhooks.ts) against a real loopback receiver.
describe('activity webhooks: postWebhook (real loopback receiver)', function () {
  let server: Server;
  let url: string;
  let answer: (res: ServerResponse) => void;

  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => answer(res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const endpoint = () => ({ url, secret: `whsec_${Buffer.alloc(24, 7).toString('base64')}` });
  const delivery = { webhookId: 'wh-test', event: { type: 'execution.status_changed' } } as unknown as WebhookDelivery;

  it('when the receiver answers 200 with a body of 64 MiB, then the delivery succeeds having read a few KiB, and the receiver sees the connection cut before its end', async () => {
    const total = 64 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let written = 0;
    let finished = false;
    const closed = new Promise<void>((resolve) => {
      answer = (res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.on('close', () => resolve());
        // As fast as the client reads: a reader without bound would take all 64 MiB.
        const pump = () => {
          while (written < total) {
            written += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          finished = true;
          res.end();
        };
        pump();
      };
    });
    await postWebhook(endpoint(), delivery, { timeoutMs: 60_000 });
    await closed;
    assert.equal(finished, false, `the receiver wrote its whole ${written}-byte body: the delivery read it all`);
    assert.ok(written < total, `${written} bytes written`);
  });

  it('when the receiver answers 500 with a short body, then the delivery fails with the status', async () => {
    answer = (res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('x'.repeat(MAX_WEBHOOK_ANSWER_BYTES / 2));
    await assert.rejects(postWebhook(endpoint(), delivery, { timeoutMs: 10_000 }), /answered 500/);
  });
});
