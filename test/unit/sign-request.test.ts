import assert from 'node:assert/strict';
import { encodeFunctionData, erc20Abi } from 'viem';
import { refundRefusal, topUpRefusal, type SignRowFacts, type SignSourceFacts, type UnsignedTx } from '../../domain/sign-request';

const CHAIN = 'evm:31337';
const ADDRESS = '0x' + '0a'.repeat(20);
const PAYER = '0x' + 'ab'.repeat(20);
const TOKEN = '0x' + '11'.repeat(20);
const source: SignSourceFacts = { chain: CHAIN, address: ADDRESS, workflowId: 'exec:w:1', noncesMined: 2 };
const key = { chain: CHAIN, workflowId: 'exec:w:1', derivation: 'bip32-v1' as const };
const row = (over: Partial<SignRowFacts> = {}): SignRowFacts => ({
  id: 'r1',
  workflowId: 'exec:w:1',
  chain: CHAIN,
  amount: '1000000',
  asset: 'native',
  transfers: 1,
  sender: PAYER,
  payerKind: 'eoa',
  state: 'due',
  ...over,
});
const tx = (over: Partial<UnsignedTx> = {}): UnsignedTx => ({
  chainId: 31337,
  nonce: 2,
  to: PAYER,
  value: '979000',
  gas: '21000',
  maxFeePerGas: '1',
  maxPriorityFeePerGas: '1',
  ...over,
});

describe('domain/sign-request: a signer apart from the worker signs only what the refunds ledger says', () => {
  it('when a refund pays the rows’ destination their money less its most cost, at the nonce the ledger expects, then it is signed; one wei more, another destination, another nonce or chain is refused', () => {
    const rows = [row(), row({ id: 'r2', amount: '20000' })];
    const request = { kind: 'refund' as const, key, rows: ['r1', 'r2'], tx: tx({ value: String(1_020_000 - 21_000) }) };
    assert.equal(refundRefusal(request, source, rows), undefined);
    for (const bad of [
      tx({ value: String(1_020_000 - 21_000 + 1) }),
      tx({ to: '0x' + 'cd'.repeat(20) }),
      tx({ nonce: 3 }),
      tx({ chainId: 1 }),
      tx({ data: '0x00' }),
    ])
      assert.notEqual(refundRefusal({ ...request, tx: bad }, source, rows), undefined, JSON.stringify(bad));
    assert.notEqual(refundRefusal(request, source, [rows[0]]), undefined, 'a row named is missing');
    assert.notEqual(
      refundRefusal(request, source, [rows[0], row({ id: 'r2', sender: '0x' + 'cd'.repeat(20) })]),
      undefined,
      'two destinations',
    );
    assert.notEqual(refundRefusal(request, source, [rows[0], row({ id: 'r2', state: 'refunded' })]), undefined, 'a row not owed');
    assert.notEqual(refundRefusal({ ...request, key: { ...key, workflowId: 'exec:w:2' } }, source, rows), undefined, 'another key');
  });

  it('when a token refund is a transfer of the rows’ amounts to their destination, then it is signed; any other call data or value is refused', () => {
    const asset = `erc20:${TOKEN}`;
    const rows = [row({ asset, amount: '5' }), row({ id: 'r2', asset, amount: '7' })];
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [PAYER as `0x${string}`, 12n] });
    const request = { kind: 'refund' as const, key, rows: ['r1', 'r2'], tx: tx({ to: TOKEN, value: '0', data }) };
    assert.equal(refundRefusal(request, source, rows), undefined);
    const more = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [PAYER as `0x${string}`, 13n] });
    assert.notEqual(refundRefusal({ ...request, tx: tx({ to: TOKEN, value: '0', data: more }) }, source, rows), undefined);
    assert.notEqual(refundRefusal({ ...request, tx: tx({ to: TOKEN, value: '1', data }) }, source, rows), undefined);
  });

  it('when a cancel sends nothing to the address itself at the rows’ nonce, then it is signed; a cancel of a nonce never signed, or one sending money, is refused', () => {
    const paying = [row({ state: 'void', refundNonce: 1 })];
    const cancel = { kind: 'cancel' as const, key, rows: ['r1'], tx: tx({ nonce: 1, to: ADDRESS, value: '0' }) };
    assert.equal(refundRefusal(cancel, source, paying), undefined);
    assert.notEqual(refundRefusal(cancel, source, [row()]), undefined);
    assert.notEqual(refundRefusal({ ...cancel, tx: tx({ nonce: 1, to: ADDRESS, value: '5' }) }, source, paying), undefined);
  });

  it('when a top-up pays a token row’s deposit address at most its refund’s fee, then it is signed; more, another address or a native row is refused', () => {
    const asset = `erc20:${TOKEN}`;
    const paying = row({ asset, state: 'paying', refundNonce: 2, newestMostCost: 42_000n });
    const request = { kind: 'top-up' as const, chain: CHAIN, refund: 'r1', tx: tx({ to: ADDRESS, value: '42000' }) };
    assert.equal(topUpRefusal(request, source, paying), undefined);
    assert.notEqual(topUpRefusal({ ...request, tx: tx({ to: ADDRESS, value: '42001' }) }, source, paying), undefined);
    assert.notEqual(topUpRefusal({ ...request, tx: tx({ to: PAYER, value: '1' }) }, source, paying), undefined);
    assert.notEqual(topUpRefusal(request, source, row({ state: 'paying', newestMostCost: 42_000n })), undefined);
    assert.notEqual(topUpRefusal(request, source, undefined), undefined);
    assert.equal(topUpRefusal(request, source, { ...paying, state: 'void' }), undefined, 'a voided row’s cancel is topped up too');
    assert.notEqual(topUpRefusal(request, source, { ...paying, refundBlock: 9 }), undefined, 'its nonce mined');
    assert.notEqual(topUpRefusal(request, source, row({ asset, state: 'due', newestMostCost: 42_000n })), undefined, 'nothing signed yet');
  });
});
