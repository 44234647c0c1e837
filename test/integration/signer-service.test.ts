import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { erc20Abi, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { projectRoot } from '../../config/config';
import type { RefundRow } from '../../contracts/refunds';
import { ANVIL_GAS_ACCOUNT } from '../../scripts/lib/anvil';
import { startChildService, type ChildService } from '../../scripts/lib/child-service';
import { childEnv } from '../../config/child-env';
import { provisionDepositKeys } from '../../scripts/lib/deposit-keys';
import { TestChain } from '../support/chain';
import { eventually } from '../support/executions';
import { startFollowingStack } from '../../scripts/lib/deposit-helpers';
import { depositHelpers, type PreparedDeposit } from '../support/deposit-helpers';
import { freePort } from '../support/ports';
import { ProcessStack } from '../support/process-stack';
import { refundReads } from '../support/refund-reads';
import { request } from '../support/http';

const CHAIN = 'evm:31337';
const CONFIRMATIONS = 2;
const ETH = 10n ** 18n;
const USD = 10n ** 6n;

/**
 * The worker with no key file of its own: every signature comes from the signer service
 * (`npm run signer`, a process of its own holding the seed and the gas account key), which signs
 * only what the refunds ledger says. Real processes, a real anvil chain.
 */
describe('the signer service: a worker without keys pays native and token refunds; the signer refuses what the ledger does not say', function () {
  this.timeout(240_000);
  let chain: TestChain;
  let stack: ProcessStack;
  let tusd: Address;
  let tmp: string;
  let signer: ChildService | undefined;
  let signerUrl: string;
  let signerEnv: NodeJS.ProcessEnv;
  const signerOutput: string[] = [];

  const startSigner = async () => {
    signer = startChildService('signer', process.execPath, [path.join(projectRoot, 'dist', 'scripts', 'signer.js')], {
      readyPattern: /"msg":"signer listening"/,
      env: signerEnv,
      echo: false,
    });
    signer.child.stdout!.on('data', (c: Buffer) => signerOutput.push(c.toString()));
    await signer.ready;
  };

  before(async function () {
    this.timeout(180_000);
    chain = await TestChain.start();
    tusd = await chain.deployToken('Test USD', 'tUSD');
    tmp = mkdtempSync(path.join(os.tmpdir(), 'intent-service-signer-'));
    const gasKeyFile = path.join(tmp, 'gas-account.key');
    writeFileSync(gasKeyFile, `${ANVIL_GAS_ACCOUNT.privateKey}\n`, { mode: 0o600 });
    const port = await freePort();
    signerUrl = `http://127.0.0.1:${port}`;
    const tokenFile = path.join(tmp, 'signer-token');
    stack = await startFollowingStack(
      chain,
      CHAIN,
      CONFIRMATIONS,
      {
        DEPOSIT_TOKENS: `${CHAIN}:${tusd}=tUSD:6`,
        CHAIN_REORG_WINDOW: '6',
        REFUND_PAYMENTS: 'on',
        SIGNER_URL: signerUrl,
        SIGNER_TOKEN_FILE: tokenFile,
        // The worker's own key files: none. Set, a worker that read them would refuse to start.
        DEPOSIT_SEED_FILE: path.join(tmp, 'no-seed-here'),
      },
      (options: { env: Record<string, string> }) => {
        const made = new ProcessStack(options);
        // The signer holds the stack's seed and the gas account key; it is up before the worker asks it.
        const seedFile = path.join(made.tmpDir, 'deposit-seed');
        const before = made.start.bind(made);
        made.start = async () => {
          await provisionDepositKeys({ seedFile, xpubFile: path.join(made.tmpDir, 'deposit-xpub'), holdsAddresses: async () => false });
          signerEnv = childEnv({
            DEPOSIT_SEED_FILE: seedFile,
            REFUND_GAS_KEY_FILE: gasKeyFile,
            DATABASE_FILE: path.join(made.tmpDir, 'read-model.sqlite'),
            SIGNER_PORT: String(port),
            SIGNER_TOKEN_FILE: tokenFile,
            LOG_LEVEL: 'info',
          });
          await startSigner();
          return before();
        };
        return made;
      },
    );
  });
  after(async () => {
    await stack?.stop();
    await signer?.stop(5000);
    await chain?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const deposits = depositHelpers(
    () => stack,
    () => chain,
    CHAIN,
  );
  const { rowOf, rowNow, rowMinedInto, mineUntil } = refundReads(
    () => stack,
    () => chain,
  );
  const balance = (address: string) => chain.client.getBalance({ address: address as Address });

  /** A fresh EOA holding `value` wei, and its key. */
  async function fundedPayer(value: bigint): Promise<{ key: Hex; address: Address }> {
    const key = generatePrivateKey();
    const address = privateKeyToAccount(key).address;
    await chain.send(address, value);
    await chain.mine(1);
    return { key, address };
  }

  /** An execution whose deposit was taken, then a second transfer from a payer of its own: a row to pay back. */
  async function overpaid(): Promise<{ e: PreparedDeposit; tx: Hex; payer: Address }> {
    const e = await deposits.prepare({ minAmount: '1000', idPrefix: 'signer' });
    await chain.send(e.address, 1000n);
    await chain.mine(CONFIRMATIONS);
    await deposits.operationPending(e, 30_000);
    const payer = await fundedPayer(ETH);
    const tx = await chain.sendRaw(await chain.signedTransfer(payer.key, e.address, ETH / 2n));
    await chain.mine(CONFIRMATIONS);
    return { e, tx, payer: payer.address };
  }

  it('when a native and a token refund are owed, then the worker, holding no key, pays both through the signer service', async () => {
    const { e, tx, payer } = await overpaid();
    const before = await balance(payer);
    const row = await rowMinedInto(e, tx, 'refunded');
    assert.equal((await balance(payer)) - before, BigInt(row.refundValue!));

    const back = privateKeyToAccount(generatePrivateKey()).address;
    const asset = `erc20:${tusd.toLowerCase()}`;
    const t = await deposits.prepare({
      asset,
      minAmount: String(USD),
      idPrefix: 'signer-token',
      extra: { ttlSeconds: 1, deposit: { chain: CHAIN, asset, minAmount: String(USD), refundAddress: back } },
    });
    await eventually(async () => (await deposits.record(t)).status === 'EXPIRED', 15_000);
    const tokenTx = await chain.sendToken(tusd, t.address, 5n * USD);
    await chain.mine(CONFIRMATIONS);
    const tokenRow = await rowMinedInto(t, tokenTx, 'refunded', 150_000);
    assert.equal(tokenRow.refundValue, String(5n * USD));
    assert.equal(await chain.client.readContract({ address: tusd, abi: erc20Abi, functionName: 'balanceOf', args: [back] }), 5n * USD);
    const signed = signerOutput.join('').match(/"msg":"signed"/g) ?? [];
    assert.ok(signed.length >= 3, `the signer signed the refunds and the top-up (${signed.length})`);
  });

  it('when the signer is killed (SIGKILL) with a refund owed, then nothing is signed meanwhile; started again, the refund is paid once', async () => {
    const { e, tx, payer } = await overpaid();
    await rowOf(e, tx);
    await signer!.stop(0, 'SIGKILL');
    await chain.mine(10);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const waiting = (await rowNow(e, tx))!;
    assert.equal(waiting.refundNonce, undefined, 'nothing signed without the signer');
    const before = await balance(payer);
    await startSigner();
    const row = await mineUntil(async () => {
      const now = await rowNow(e, tx);
      return now?.state === 'refunded' && (now as RefundRow);
    });
    assert.equal(row.refundVariants!.filter((v) => v.kind === 'refund').length >= 1, true);
    assert.equal((await balance(payer)) - before, BigInt(row.refundValue!), 'paid once');
    assert.equal(await chain.client.getTransactionCount({ address: e.address as Address, blockTag: 'latest' }), 1);
  });

  it('when a caller asks the signer to sign what the ledger does not say (another destination, more money, no token), then it answers 403 or 401 and signs nothing', async () => {
    const { e, tx } = await overpaid();
    const row = await rowOf(e, tx);
    const token = (await import('node:fs')).readFileSync(path.join(tmp, 'signer-token'), 'utf8').trim();
    const key = { chain: CHAIN, workflowId: row.workflowId, derivation: 'bip32-v1' };
    const base = { chainId: 31337, nonce: 0, gas: '21000', maxFeePerGas: '2000000000', maxPriorityFeePerGas: '1000000000' };
    const thief = privateKeyToAccount(generatePrivateKey()).address;
    const ask = (body: unknown, bearer = token) => request(signerUrl, 'POST', '/v1/sign', { json: body, token: bearer });
    const cases: Array<[string, unknown, number]> = [
      ['another destination', { kind: 'refund', key, rows: [row.id], tx: { ...base, to: thief, value: '1000' } }, 403],
      ['more than the row', { kind: 'refund', key, rows: [row.id], tx: { ...base, to: row.sender, value: String(ETH) } }, 403],
      [
        'a row of another address',
        { kind: 'refund', key: { ...key, workflowId: 'exec:w:other' }, rows: [row.id], tx: { ...base, to: row.sender, value: '1' } },
        403,
      ],
      ['a cancel of a nonce never signed', { kind: 'cancel', key, rows: [row.id], tx: { ...base, to: e.address, value: '0' } }, 403],
      ['a top-up of a native row', { kind: 'top-up', chain: CHAIN, refund: row.id, tx: { ...base, to: e.address, value: '1' } }, 403],
      [
        'a field the contract does not know',
        { kind: 'refund', key, rows: [row.id], tx: { ...base, to: row.sender, value: '1', extra: 1 } },
        400,
      ],
    ];
    for (const [what, body, status] of cases) {
      const answer = await ask(body);
      assert.equal(answer.status, status, `${what}: ${answer.text}`);
      assert.equal(answer.body.signed, undefined, what);
    }
    const anonymous = await ask(cases[0][1], 'not-the-token');
    assert.equal(anonymous.status, 401, anonymous.text);
  });
});
