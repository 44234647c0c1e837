import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot, loadConfigOf } from '../../config/config';
import { openDatabase } from '../../db/database';
import { DepositAddressStore } from '../../db/deposit-addresses';
import { depositAccountKey, depositXpub } from '../../lib/deposit-derivation';
import { createDepositSeedFile, depositAddress, readDepositSeed } from '../../lib/deposit-seed';
import { executionWorkflowId } from '../../contracts/temporal';
import { TestChain } from '../support/chain';
import { newWallet, sampleIntent } from '../support/executions';
import { request } from '../support/http';
import { startChildService } from '../../scripts/lib/child-service';
import { provisionDepositKeys } from '../../scripts/lib/deposit-keys';
import { stackEnv, startServiceProcess } from '../support/service-process';
import { getStack, type Stack } from '../support/stack';

/**
 * Key material that is missing, open to others or not the deployment's stops a process at start,
 * naming the file: the API (the public key), the worker (the seed), npm start (a seed gone beside
 * the read model's addresses). Real processes, the shared stack's Temporal.
 */
describe('key material: processes refuse to start on a missing, open or foreign key file, naming it', function () {
  this.timeout(90_000);
  let stack: Stack;
  let tmp: string;
  before(async () => {
    stack = await getStack();
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'key-material-'));
  });
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  /** Runs `script` until it exits (it must, within the timeout); answers its exit code and everything it wrote. */
  async function refusal(name: string, script: string, env: Record<string, string>): Promise<{ code: number | string; output: string }> {
    const chunks: string[] = [];
    const child = startChildService(name, process.execPath, [path.join(projectRoot, 'dist', script)], {
      // Never "ready": the test waits for the exit.
      readyPattern: /a line no process writes/,
      env: stackEnv(stack, { CHAIN_RPC_URL: 'http://127.0.0.1:9', TEMPORAL_TASK_QUEUE: `keys-${process.pid}`, ...env }),
      echo: false,
      readyTimeoutMs: 60_000,
    });
    child.child.stdout!.on('data', (c: Buffer) => chunks.push(c.toString()));
    child.child.stderr!.on('data', (c: Buffer) => chunks.push(c.toString()));
    try {
      const code = await Promise.race([
        child.exited,
        new Promise<string>((resolve) => setTimeout(() => resolve('still running after 45 s'), 45_000)),
      ]);
      return { code, output: chunks.join('') };
    } finally {
      // A process that did not refuse must not outlive the test.
      await child.stop(5000);
    }
  }

  /** A read model in `dir` holding one deposit address derived from `seedFile`'s seed. */
  async function readModelWithAddress(dir: string, seedFile: string): Promise<string> {
    const sqliteFile = path.join(dir, 'read-model.sqlite');
    const database = await openDatabase({ sqliteFile });
    try {
      const seed = Uint8Array.from(Buffer.from(fs.readFileSync(seedFile, 'utf8').trim(), 'hex'));
      const workflowId = 'exec:w:keys';
      await new DepositAddressStore(database).register({
        chain: 'evm:31337',
        address: depositAddress(seed, 'evm:31337', workflowId, 'bip32-v1'),
        workflowId,
        minAmount: '1',
      });
    } finally {
      await database.close();
    }
    return sqliteFile;
  }

  it("when the API's config is read, then it holds no seed setting: only the public key file", () => {
    const config = loadConfigOf('api', { CHAIN_RPC_URL: 'http://127.0.0.1:9' }) as unknown as Record<string, unknown>;
    assert.equal('depositSeedFile' in config, false);
    assert.equal(typeof config.depositXpubFile, 'string');
  });

  it('when the API runs beside a seed file it cannot read, then it starts and prepares answer the addresses the seed’s public key derives (nothing it holds derives a key)', async () => {
    const chain = await TestChain.start();
    const dir = fs.mkdtempSync(path.join(tmp, 'api-no-seed-'));
    const seedFile = path.join(dir, 'deposit-seed');
    const xpubFile = path.join(dir, 'deposit-xpub');
    await provisionDepositKeys({ seedFile, xpubFile, holdsAddresses: async () => false });
    const seed = readDepositSeed(seedFile);
    fs.chmodSync(seedFile, 0o000);
    const api = await startServiceProcess(
      'api-beside-seed',
      'api/main.js',
      'api listening',
      stackEnv(stack, {
        CHAIN_RPC_URL: chain.url,
        DEPOSIT_CONFIRMATIONS: 'evm:31337=2',
        DEPOSIT_SEED_FILE: seedFile,
        DEPOSIT_XPUB_FILE: xpubFile,
        TEMPORAL_TASK_QUEUE: `keys-api-${process.pid}`,
        DATABASE_FILE: path.join(dir, 'read-model.sqlite'),
      }),
    );
    try {
      const wallet = newWallet();
      const executionId = `keys-${process.pid}-${Date.now()}`;
      const answer = await request(api.url, 'POST', `/api/v1/executions/${wallet.id}`, {
        json: { executionId, intent: sampleIntent(), deposit: { chain: 'evm:31337', asset: 'native', minAmount: '1000' } },
        token: stack.tokens.all,
      });
      assert.equal(answer.status, 201, answer.text);
      assert.equal(
        answer.body.result.depositTarget.address,
        depositAddress(seed, 'evm:31337', executionWorkflowId(wallet.id, executionId), 'bip32-v1'),
      );
    } finally {
      await api.stop(5000);
      fs.chmodSync(seedFile, 0o600);
      await chain.stop();
    }
  });

  it('when the API has a chain and its public key file is missing, or holds a private key, then it exits 1 naming the file', async () => {
    const missing = path.join(tmp, 'no-such-xpub');
    const gone = await refusal('api-no-xpub', 'api/main.js', { DEPOSIT_XPUB_FILE: missing, DATABASE_FILE: path.join(tmp, 'api-1.sqlite') });
    assert.equal(gone.code, 1, gone.output);
    assert.ok(gone.output.includes(missing), gone.output);
    const seedFile = path.join(tmp, 'api-seed');
    createDepositSeedFile(seedFile);
    const xprv = path.join(tmp, 'xprv');
    fs.writeFileSync(
      xprv,
      `${depositAccountKey(Uint8Array.from(Buffer.from(fs.readFileSync(seedFile, 'utf8').trim(), 'hex'))).privateExtendedKey}\n`,
    );
    const secret = await refusal('api-xprv', 'api/main.js', { DEPOSIT_XPUB_FILE: xprv, DATABASE_FILE: path.join(tmp, 'api-2.sqlite') });
    assert.equal(secret.code, 1, secret.output);
    assert.ok(secret.output.includes(xprv) && /extended private key/.test(secret.output), secret.output);
  });

  it('when a worker has a chain and its seed is missing, open to group or others, or not the seed of the read model’s addresses, then it exits 1 naming the file', async () => {
    const missing = path.join(tmp, 'no-such-seed');
    const gone = await refusal('worker-no-seed', 'worker/main.js', {
      DEPOSIT_SEED_FILE: missing,
      DATABASE_FILE: path.join(tmp, 'w-1.sqlite'),
    });
    assert.equal(gone.code, 1, gone.output);
    assert.ok(gone.output.includes(missing), gone.output);

    const open = path.join(tmp, 'open-seed');
    createDepositSeedFile(open);
    fs.chmodSync(open, 0o644);
    const loose = await refusal('worker-open-seed', 'worker/main.js', {
      DEPOSIT_SEED_FILE: open,
      DATABASE_FILE: path.join(tmp, 'w-2.sqlite'),
    });
    assert.equal(loose.code, 1, loose.output);
    assert.ok(loose.output.includes(open) && loose.output.includes('mode 0644'), loose.output);

    const dir = fs.mkdtempSync(path.join(tmp, 'foreign-'));
    const theirs = path.join(dir, 'their-seed');
    const ours = path.join(dir, 'our-seed');
    createDepositSeedFile(theirs);
    createDepositSeedFile(ours);
    const sqliteFile = await readModelWithAddress(dir, theirs);
    const foreign = await refusal('worker-foreign-seed', 'worker/main.js', { DEPOSIT_SEED_FILE: ours, DATABASE_FILE: sqliteFile });
    assert.equal(foreign.code, 1, foreign.output);
    assert.ok(foreign.output.includes(ours) && /does not derive/.test(foreign.output), foreign.output);
  });

  it('when npm start finds its seed gone while the read model holds deposit addresses, then it exits 1 naming the file and starts nothing; with no address it makes the seed and its public key', async () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'start-'));
    const seedFile = path.join(dir, 'deposit-seed');
    createDepositSeedFile(seedFile);
    const sqliteFile = await readModelWithAddress(dir, seedFile);
    fs.rmSync(seedFile);
    const gone = await refusal('start-no-seed', 'scripts/start.js', {
      DEPOSIT_SEED_FILE: seedFile,
      DEPOSIT_XPUB_FILE: path.join(dir, 'deposit-xpub'),
      DATABASE_FILE: sqliteFile,
    });
    assert.equal(gone.code, 1, gone.output);
    assert.ok(gone.output.includes(seedFile) && /restore it/.test(gone.output), gone.output);
    assert.equal(fs.existsSync(seedFile), false, 'no seed made up');
    assert.equal(fs.existsSync(path.join(dir, 'deposit-xpub')), false);
    // The same provisioning with no address yet (the launcher's first run): the seed, then its public key.
    const fresh = { seedFile: path.join(dir, 'fresh-seed'), xpubFile: path.join(dir, 'fresh-xpub'), holdsAddresses: async () => false };
    assert.equal((await provisionDepositKeys(fresh)).length, 2);
    assert.equal(fs.statSync(fresh.seedFile).mode & 0o777, 0o600);
    const seed = Uint8Array.from(Buffer.from(fs.readFileSync(fresh.seedFile, 'utf8').trim(), 'hex'));
    assert.equal(fs.readFileSync(fresh.xpubFile, 'utf8'), `${depositXpub(seed)}\n`);
    assert.deepEqual(await provisionDepositKeys({ ...fresh, holdsAddresses: async () => true }), [], 'nothing made twice');
  });
});
