import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { HttpRequestError } from 'viem';
import { createLogger } from '../../config/logger';
import { secretsOf } from '../../config/secrets';
import { digestOf, originOf, redactError, redactor, redactValue } from '../../lib/redact';

const RPC = 'https://mainnet.example.io/v3/0123456789abcdef';

describe('redact: secrets named by their origin or a digest', () => {
  it('when a text holds a secret URL, then it holds its origin instead, its path and query gone wherever they stand', () => {
    const redact = redactor({ urls: [RPC, 'http://127.0.0.1:9000/hooks/s3cr3tpath?key=abcdef'] });
    assert.equal(redact(`POST ${RPC} failed`), 'POST https://mainnet.example.io failed');
    assert.equal(redact('URL: http://127.0.0.1:9000/hooks/s3cr3tpath?key=abcdef'), 'URL: http://127.0.0.1:9000');
    assert.equal(redact('path /v3/0123456789abcdef alone'), 'path [redacted] alone');
    assert.equal(redact('nothing secret here'), 'nothing secret here');
    assert.equal(originOf('not a url'), '[redacted url]');
  });

  it('when a text holds a secret value, a bearer token or a URL with credentials, then it holds a digest or [redacted]', () => {
    const redact = redactor({ values: ['whsec_abcdefghijklmnop'] });
    assert.equal(redact('secret whsec_abcdefghijklmnop'), `secret ${digestOf('whsec_abcdefghijklmnop')}`);
    assert.notEqual(digestOf('a-secret-1'), digestOf('a-secret-2'));
    assert.equal(redact('Authorization: Bearer tok_123.abc'), 'Authorization: Bearer [redacted]');
    assert.equal(redact('postgres://intent:pw@db:5432/intent'), 'postgres://[redacted]@db:5432/intent');
  });

  it("when viem's error names the node, then redactError rewrites its message, stack, fields and cause in place, its class and status kept", () => {
    const cause = new Error(`fetch ${RPC}`);
    const err = new HttpRequestError({ url: RPC, status: 500, body: { method: 'eth_blockNumber' }, cause });
    assert.ok(err.message.includes(RPC));
    const same = redactError(err, redactor({ urls: [RPC] }));
    assert.equal(same, err);
    assert.ok(err instanceof HttpRequestError);
    assert.equal(err.status, 500);
    for (const text of [err.message, err.stack ?? '', err.url, err.shortMessage, err.details, cause.message, cause.stack ?? ''])
      assert.ok(!text.includes('0123456789abcdef'), text);
    assert.ok(err.message.includes('https://mainnet.example.io'));
  });

  it('when log fields hold secrets, then redactValue copies them redacted and leaves the original alone', () => {
    const fields = { rpcUrl: RPC, nested: { list: [RPC] }, count: 3 };
    assert.deepEqual(redactValue(fields, redactor({ urls: [RPC] })), {
      rpcUrl: 'https://mainnet.example.io',
      nested: { list: ['https://mainnet.example.io'] },
      count: 3,
    });
    assert.equal(fields.rpcUrl, RPC);
  });

  it("when a process logs its config's secrets (fields, message, an error), then its lines name them by origin or digest", async () => {
    const lines: string[] = [];
    const out = new Writable({
      write(chunk: Buffer, _, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const secrets = secretsOf({
      chain: { rpcUrl: RPC },
      webhooks: [{ url: 'https://hooks.example/t/abcdef123', secret: 'whsec_abcdefghijklmnop' }],
      database: { url: 'postgres://intent:s3cr3t-pw@db.internal/intent' },
    });
    const logger = createLogger('test', 'info', out, secrets);
    logger.info('worker polling task queue intent-service; read model at postgres://intent:s3cr3t-pw@db.internal/intent');
    logger.info('a message quoting s3cr3t-pw alone');
    logger.info({ rpcUrl: RPC, err: new Error('to https://hooks.example/t/abcdef123') }, `node ${RPC} down`);
    await new Promise((r) => setImmediate(r));
    const text = lines.join('');
    for (const secret of ['0123456789abcdef', 'abcdef123', 'whsec_', 's3cr3t-pw']) assert.ok(!text.includes(secret), text);
    // The read model's user and database name are not secret: the service's own name stays readable.
    assert.ok(text.includes('worker polling task queue intent-service; read model at postgres://intent:[redacted'), text);
    assert.ok(text.includes('"rpcUrl":"https://mainnet.example.io"'), text);
    assert.ok(text.includes('node https://mainnet.example.io down'), text);
  });

  it('when the read model URL carries its password as a parameter or percent-encoded, then each spelling of it is a secret, and its user is not', () => {
    const values = secretsOf({ database: { url: 'postgres://intent@db/intent?sslmode=require&password=p%40ss%2Fw0rd' } }).values ?? [];
    for (const spelling of ['p@ss/w0rd', 'p%40ss%2Fw0rd']) assert.ok(values.includes(spelling), JSON.stringify(values));
    assert.ok(!values.includes('intent'), JSON.stringify(values));
    assert.deepEqual(secretsOf({ database: { url: 'postgres://intent@db/intent' } }).values ?? [], []);
  });
});
