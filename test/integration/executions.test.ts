import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { toBase58, toHex } from '../../domain/encoding';
import { depositCompletedSignal, executionWorkflowId, submitSignatureUpdate } from '../../contracts/temporal';
import { RefundLedger } from '../../db/refund-ledger';
import { request } from '../support/http';
import { getStack, type Stack } from '../support/stack';
import {
  depositHttp,
  eventually,
  getExecution,
  newWallet,
  nowSeconds,
  prepare,
  sampleIntent,
  signedBody,
  submit,
  type TestWallet,
} from '../support/executions';
import { childEnv } from '../../config/child-env';

describe('executions: prepare, deposit, submit, inspect (real Temporal, real HTTP)', () => {
  let stack: Stack;
  before(async function () {
    this.timeout(120_000);
    stack = await getStack();
  });

  /** Prepares an execution for a fresh wallet and returns what the tests need. */
  async function prepared(body: Record<string, unknown> = {}) {
    const wallet = newWallet();
    const intent = sampleIntent();
    const executionId = `ex-${randomUUID()}`;
    const res = await prepare(stack, wallet, { executionId, intent, ...body });
    assert.equal(res.status, 201, res.text);
    return { wallet, intent, executionId, record: res.body.result };
  }

  // Asynchronous on purpose: the worker runs in this process, and a blocking exec would stop it
  // from answering the very query the CLI is waiting for.
  const temporalCli = async (args: string[]) =>
    (
      await promisify(execFile)(stack.temporalBinary, [...args, '--address', stack.temporal.address], {
        encoding: 'utf8',
        env: childEnv({ TEMPORAL_VERSION_CHECK_DISABLED: '1' }),
      })
    ).stdout;

  describe('prepare', () => {
    it('when a wallet prepares an execution, then it is PREPARED with its intentHash, signer key and one history entry', async () => {
      const { wallet, executionId, record } = await prepared();
      assert.equal(record.status, 'PREPARED');
      assert.equal(record.executionId, executionId);
      assert.equal(record.wallet, wallet.id);
      assert.match(record.intentHash, /^[0-9a-f]{64}$/);
      assert.equal(record.signerPublicKey, toHex(wallet.publicKey));
      assert.deepEqual(
        record.history.map((h: any) => h.status),
        ['PREPARED'],
      );
      const read = await getExecution(stack, wallet.id, executionId);
      assert.equal(read.status, 200);
      // GET adds the record's refunds summary (none owed yet) to what prepare answered.
      const { refunds, ...stored } = read.body.result;
      assert.deepEqual(stored, record);
      assert.equal(refunds.total, 0);
    });

    it('when no executionId is given, then one is generated', async () => {
      const wallet = newWallet();
      const res = await request(stack.api.url, 'POST', `/api/v1/executions/${wallet.id}`, {
        token: stack.tokens.prepare,
        json: { intent: { a: 1 } },
      });
      assert.equal(res.status, 201, res.text);
      assert.match(res.body.result.executionId, /^[A-Za-z0-9._-]{1,128}$/);
    });

    it('when the same executionId is prepared twice for a wallet, then the second is 409', async () => {
      const { wallet, executionId } = await prepared();
      const again = await prepare(stack, wallet, { executionId });
      assert.equal(again.status, 409);
      assert.equal(typeof again.body.error, 'string');
    });

    it('when prepare has no token, a deposit-only token, or an unknown token, then it is 401, 403, 401', async () => {
      const wallet = newWallet();
      assert.equal((await prepare(stack, wallet, {}, '')).status, 401);
      assert.equal((await prepare(stack, wallet, {}, stack.tokens.deposit)).status, 403);
      assert.equal((await prepare(stack, wallet, {}, 'ist_unknown')).status, 401);
    });

    it('when the signer key is small-order, or the wallet is no key and none is given, then prepare is 400', async () => {
      const wallet = newWallet();
      const zero = await prepare(stack, wallet, { signerPublicKey: toHex(new Uint8Array(32)) });
      assert.equal(zero.status, 400);
      assert.match(zero.body.error, /small-order/);
      const notAKey = await request(stack.api.url, 'POST', '/api/v1/executions/not-a-key', {
        token: stack.tokens.all,
        json: { intent: { a: 1 } },
      });
      assert.equal(notAKey.status, 400);
      assert.match(notAKey.body.error, /signerPublicKey/);
    });

    it('when the body is off-schema (unknown field, intent not an object, ttl 0, deep intent, an executionId that is a route word or a dot segment), then prepare is 400', async () => {
      const wallet = newWallet();
      let deep: any = {};
      for (let i = 0; i < 40; i++) deep = { d: deep };
      for (const body of [
        { extra: 1 },
        { intent: [1] },
        { ttlSeconds: 0 },
        { intent: deep },
        { executionId: 'has space' },
        { executionId: 'submit' },
        { executionId: '.' },
        { executionId: '..' },
      ]) {
        const res = await prepare(stack, wallet, body);
        assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 60)} → ${res.text}`);
        assert.equal(typeof res.body.error, 'string');
      }
    });

    it('when a prepare names its execution after a word of the execution routes (submit, events, deposit, cancel), then it is 400 saying the word is reserved, and nothing is started', async () => {
      const wallet = newWallet();
      for (const executionId of ['submit', 'events', 'deposit', 'cancel']) {
        const res = await prepare(stack, wallet, { executionId });
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body.code, 'BAD_REQUEST');
        assert.match(res.body.error, new RegExp(`executionId "${executionId}" is reserved: .*words of the execution routes`));
        assert.equal((await getExecution(stack, wallet.id, executionId)).status, executionId === 'submit' ? 405 : 404);
      }
    });
  });

  describe('transitions (docs/architecture.md "Executions")', () => {
    it('when a deposit arrives before any signature, then PREPARED → OPERATION_PENDING, and a valid submit then gives SIGNING', async () => {
      const { wallet, intent, executionId } = await prepared();
      const dep = await depositHttp(stack, wallet.id, executionId, { txHash: '0xabc', chain: 'solana', amount: '12550' });
      assert.equal(dep.status, 200, dep.text);
      assert.equal(dep.body.result.status, 'OPERATION_PENDING');
      assert.deepEqual(dep.body.result.deposit, { txHash: '0xabc', chain: 'solana', amount: '12550' });

      const res = await submit(stack, wallet.id, signedBody(wallet, executionId, intent));
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { result: { status: 'SIGNING' } });
      const read = (await getExecution(stack, wallet.id, executionId)).body.result;
      assert.equal(read.status, 'SIGNING');
      assert.deepEqual(
        read.history.map((h: any) => h.status),
        ['PREPARED', 'OPERATION_PENDING', 'SIGNING'],
      );
      assert.ok(read.signedPayload.signature.startsWith('0x'));
      assert.equal(typeof read.signingMessage, 'string');
    });

    it('when a valid submit comes first, then it stays PREPARED with the payload stored, and the deposit moves it to SIGNING through OPERATION_PENDING', async () => {
      const { wallet, intent, executionId } = await prepared();
      const res = await submit(stack, wallet.id, signedBody(wallet, executionId, intent));
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { result: { status: 'PREPARED' } });
      const mid = (await getExecution(stack, wallet.id, executionId)).body.result;
      assert.equal(mid.status, 'PREPARED');
      assert.ok(mid.signedPayload, 'signed payload stored');

      const dep = await depositHttp(stack, wallet.id, executionId, { txHash: '0xdef' });
      assert.equal(dep.status, 200, dep.text);
      assert.equal(dep.body.result.status, 'SIGNING');
      assert.deepEqual(
        dep.body.result.history.map((h: any) => h.status),
        ['PREPARED', 'OPERATION_PENDING', 'SIGNING'],
      );
    });

    it('when no deposit arrives before expiresAt, then the timer moves it to EXPIRED; submit and deposit are then 409 and the deposit is kept for refund', async () => {
      const { wallet, intent, executionId } = await prepared({ ttlSeconds: 1 });
      const expired = await eventually(async () => {
        const r = (await getExecution(stack, wallet.id, executionId)).body.result;
        return r.status === 'EXPIRED' && r;
      }, 15_000);
      assert.deepEqual(
        expired.history.map((h: any) => h.status),
        ['PREPARED', 'EXPIRED'],
      );

      const res = await submit(stack, wallet.id, signedBody(wallet, executionId, intent));
      assert.equal(res.status, 409);
      assert.match(res.body.error, /EXPIRED/);

      // The run closes at EXPIRED: a later deposit is owed back in the refunds ledger, not in the record.
      const workflowId = executionWorkflowId(wallet.id, executionId);
      await stack.client.workflow.getHandle(workflowId).result();
      const dep = await depositHttp(stack, wallet.id, executionId, { txHash: '0xlate' });
      assert.equal(dep.status, 409);
      const after = (await getExecution(stack, wallet.id, executionId)).body.result;
      assert.equal(after.status, 'EXPIRED');
      assert.deepEqual(after.refusedDeposits, []);
      const rows = await new RefundLedger(stack.worker.database).ofExecution(workflowId);
      assert.deepEqual(
        rows.map((r) => [r.txHash, r.reason]),
        [['0xlate', 'expired']],
      );
    });

    it('when the same deposit txHash comes twice, then the second is a no-op; another txHash is 409', async () => {
      const { wallet, executionId } = await prepared();
      assert.equal((await depositHttp(stack, wallet.id, executionId, { txHash: '0x1' })).status, 200);
      const again = await depositHttp(stack, wallet.id, executionId, { txHash: '0x1' });
      assert.equal(again.status, 200);
      assert.deepEqual(
        again.body.result.history.map((h: any) => h.status),
        ['PREPARED', 'OPERATION_PENDING'],
      );
      const other = await depositHttp(stack, wallet.id, executionId, { txHash: '0x2' });
      assert.equal(other.status, 409);
    });

    it('when deposit is called without the deposit scope, on an unknown execution, or off-schema, then 403, 404, 400', async () => {
      const { wallet, executionId } = await prepared();
      assert.equal((await depositHttp(stack, wallet.id, executionId, { txHash: '0x1' }, stack.tokens.prepare)).status, 403);
      assert.equal((await depositHttp(stack, wallet.id, 'nope', { txHash: '0x1' })).status, 404);
      assert.equal((await depositHttp(stack, wallet.id, executionId, { txHash: '0x1', extra: true })).status, 400);
    });

    it('when a chain watcher signals depositCompleted through the temporal CLI, then the execution moves to OPERATION_PENDING', async () => {
      const { wallet, executionId } = await prepared();
      await temporalCli([
        'workflow',
        'signal',
        '--workflow-id',
        executionWorkflowId(wallet.id, executionId),
        '--name',
        'depositCompleted',
        '--input',
        JSON.stringify({ txHash: '0xcli', chain: 'solana' }),
      ]);
      const record = await eventually(async () => {
        const r = (await getExecution(stack, wallet.id, executionId)).body.result;
        return r.status === 'OPERATION_PENDING' && r;
      });
      assert.equal(record.deposit.txHash, '0xcli');
    });

    it('when an execution reaches SIGNING, then `temporal workflow list --query "ExecutionState=\'SIGNING\'"` finds it and `query --type getExecution` returns its record', async () => {
      const { wallet, intent, executionId } = await prepared();
      await depositHttp(stack, wallet.id, executionId, { txHash: '0x5' });
      assert.equal((await submit(stack, wallet.id, signedBody(wallet, executionId, intent))).status, 200);
      const workflowId = executionWorkflowId(wallet.id, executionId);
      await eventually(async () => {
        const out = await temporalCli([
          'workflow',
          'list',
          '--query',
          `ExecutionState='SIGNING' AND ExecutionWallet='${wallet.id}'`,
          '-o',
          'json',
        ]);
        return out.includes(workflowId);
      }, 15_000);
      const queried = JSON.parse(
        await temporalCli(['workflow', 'query', '--workflow-id', workflowId, '--type', 'getExecution', '-o', 'json']),
      );
      assert.equal(JSON.stringify(queried).includes('"status":"SIGNING"'), true, JSON.stringify(queried).slice(0, 300));
    });
  });

  describe('workflow lifetime', () => {
    it('when an execution is OPERATION_PENDING, then its workflow stays open past the linger time; once SIGNING it closes after lingering', async function () {
      this.timeout(30_000);
      const wallet = newWallet();
      const executionId = `ex-${randomUUID()}`;
      const workflowId = executionWorkflowId(wallet.id, executionId);
      const now = Date.now();
      const handle = await stack.client.workflow.start('executionWorkflow', {
        workflowId,
        taskQueue: stack.config.temporal.taskQueue,
        args: [
          {
            executionId,
            wallet: wallet.id,
            intent: { a: 1 },
            intentHash: '00'.repeat(32),
            signerPublicKey: toHex(wallet.publicKey),
            createdAt: new Date(now).toISOString(),
            expiresAt: new Date(now + 60_000).toISOString(),
            lingerSeconds: 1,
          },
        ],
      });
      await handle.signal(depositCompletedSignal, { txHash: '0xlinger' });
      await new Promise((r) => setTimeout(r, 2500));
      assert.equal((await handle.describe()).status.name, 'RUNNING', 'still open, waiting for its signature');
      const payload = {
        signature: '0x' + '11'.repeat(64),
        publicKey: toHex(wallet.publicKey),
        connectEnvelope: { address: wallet.id, domain: 'localhost', timestamp: nowSeconds() },
        submittedAt: new Date().toISOString(),
      };
      assert.equal((await handle.executeUpdate(submitSignatureUpdate, { args: [{ payload, signingMessage: 'm' }] })).status, 'SIGNING');
      const final = await handle.result();
      assert.equal(final.status, 'SIGNING');
    });
  });

  describe('submit', () => {
    let ctx: { wallet: TestWallet; intent: unknown; executionId: string };
    beforeEach(async () => {
      const p = await prepared();
      ctx = { wallet: p.wallet, intent: p.intent, executionId: p.executionId };
    });
    const body = (overrides: Record<string, unknown> = {}) => ({ ...signedBody(ctx.wallet, ctx.executionId, ctx.intent), ...overrides });

    it('when the key and signature are base58 instead of hex, then the submit is accepted too', async () => {
      const res = await submit(stack, ctx.wallet.id, signedBody(ctx.wallet, ctx.executionId, ctx.intent, { encoding: 'base58' }));
      assert.equal(res.status, 200, res.text);
    });

    it('when the same signature is submitted again, then it is a safe retry (200, current status); a different signature is 409', async () => {
      const first = body();
      assert.equal((await submit(stack, ctx.wallet.id, first)).status, 200);
      const retry = await submit(stack, ctx.wallet.id, first);
      assert.equal(retry.status, 200);
      assert.deepEqual(retry.body, { result: { status: 'PREPARED' } });
      const other = signedBody(ctx.wallet, ctx.executionId, ctx.intent, { timestamp: nowSeconds() - 7 });
      const conflict = await submit(stack, ctx.wallet.id, other);
      assert.equal(conflict.status, 409);
      assert.match(conflict.body.error, /different signature/);
    });

    it('when the execution does not exist, or belongs to another wallet, then it is 404', async () => {
      const unknown = signedBody(ctx.wallet, 'no-such-execution', ctx.intent);
      assert.equal((await submit(stack, ctx.wallet.id, unknown)).status, 404);
      const other = newWallet();
      const foreign = signedBody(other, ctx.executionId, ctx.intent);
      const res = await submit(stack, other.id, foreign);
      assert.equal(res.status, 404);
      assert.equal(typeof res.body.error, 'string');
    });

    const badRequests: Array<[string, (b: any) => { raw?: string; json?: unknown; walletPath?: string; contentType?: string }]> = [
      ['the body is missing', () => ({ raw: '' })],
      ['the body is not JSON', () => ({ raw: '{"executionId":' })],
      ['the content type is not JSON', (b) => ({ raw: JSON.stringify(b), contentType: 'text/plain' })],
      ['a field is unknown', (b) => ({ json: { ...b, extra: 1 } })],
      ['a field is missing', (b) => ({ json: { ...b, signature: undefined } })],
      ['the timestamp is not an integer', (b) => ({ json: { ...b, connectEnvelope: { ...b.connectEnvelope, timestamp: '123' } } })],
      ['the publicKey does not decode to 32 bytes', (b) => ({ json: { ...b, publicKey: '0x1234' } })],
      ['the signature does not decode to 64 bytes', (b) => ({ json: { ...b, signature: toBase58(new Uint8Array(10).fill(7)) } })],
      ['the signature is not hex nor base58', (b) => ({ json: { ...b, signature: 'not/base58!' } })],
      [
        'connectEnvelope.address is not the wallet',
        (b) => ({ json: { ...b, connectEnvelope: { ...b.connectEnvelope, address: newWallet().id } } }),
      ],
      ['the domain is not allowed', (b) => ({ json: { ...b, connectEnvelope: { ...b.connectEnvelope, domain: 'evil.example' } } })],
      [
        'the timestamp is older than ENVELOPE_MAX_AGE_S',
        (b) => ({ json: { ...b, connectEnvelope: { ...b.connectEnvelope, timestamp: nowSeconds() - 301 } } }),
      ],
      [
        'the timestamp is too far in the future',
        (b) => ({ json: { ...b, connectEnvelope: { ...b.connectEnvelope, timestamp: nowSeconds() + 301 } } }),
      ],
      ['the publicKey is not the signer key', (b) => ({ json: { ...b, publicKey: toHex(newWallet().publicKey) } })],
      ['the wallet path parameter is malformed', (b) => ({ json: b, walletPath: 'bad%20wallet' })],
    ];
    for (const [why, make] of badRequests) {
      it(`when ${why}, then it is 400 with an error body`, async () => {
        const { raw, json, walletPath, contentType } = make(body());
        const res = await request(stack.api.url, 'POST', `/api/v1/executions/${walletPath ?? ctx.wallet.id}/submit`, {
          body: raw,
          json,
          headers: { 'content-type': contentType ?? 'application/json' },
        });
        assert.equal(res.status, 400, res.text);
        assert.equal(typeof res.body.error, 'string');
        assert.deepEqual(Object.keys(res.body), ['error', 'code']);
      });
    }

    const flip = (hex: string, byte: number) => {
      const bytes = Buffer.from(hex.slice(2), 'hex');
      bytes[byte] ^= 0x01;
      return '0x' + bytes.toString('hex');
    };

    it('when one bit of the signature is flipped, then it is 400 "signature does not verify"', async () => {
      const b = body();
      const res = await submit(stack, ctx.wallet.id, { ...b, signature: flip(b.signature, 5) });
      assert.equal(res.status, 400);
      assert.match(res.body.error, /signature/);
    });

    it('when the signed message differs by one bit (another timestamp than the one signed), then it is 400', async () => {
      const b = body();
      const res = await submit(stack, ctx.wallet.id, {
        ...b,
        connectEnvelope: { ...b.connectEnvelope, timestamp: b.connectEnvelope.timestamp ^ 1 },
      });
      assert.equal(res.status, 400);
      assert.match(res.body.error, /signature does not verify/);
    });

    it("when the intent signed is not the execution's intent, then it is 400", async () => {
      const b = signedBody(ctx.wallet, ctx.executionId, { ...(ctx.intent as object), amount: 'more' });
      const res = await submit(stack, ctx.wallet.id, b);
      assert.equal(res.status, 400);
      assert.match(res.body.error, /signature does not verify/);
    });

    it('when one bit of the public key is flipped, then it is 400', async () => {
      const b = body();
      const res = await submit(stack, ctx.wallet.id, { ...b, publicKey: flip(b.publicKey, 3) });
      assert.equal(res.status, 400);
    });

    it('when a valid body is replayed against another execution of the same wallet, then it is 400 (the message names the execution)', async () => {
      const b = body();
      const second = await prepare(stack, ctx.wallet, { executionId: `ex-${randomUUID()}`, intent: ctx.intent });
      const res = await submit(stack, ctx.wallet.id, { ...b, executionId: second.body.result.executionId });
      assert.equal(res.status, 400);
      assert.match(res.body.error, /signature does not verify/);
    });
  });
});
