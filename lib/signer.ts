/**
 * Who signs the service's transactions (refunds, cancels, gas top-ups): one interface, so that a
 * signer service, a KMS or an HSM can take the key files' place without touching the workflows or
 * the activities (docs/decisions/0100). The local signer holds the keys in the worker's memory.
 */
import type { Hex, TransactionSerializable } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { DepositKeyRef, SignRequest, UnsignedTx } from '../domain/sign-request';
import { depositKey, readDepositSeed } from './deposit-seed';
import { readGasAccountKey, type GasAccountSigner } from './gas-account-key';

export type { DepositKeyRef, SignRequest, UnsignedTx } from '../domain/sign-request';

export interface Signer {
  /** The deposit address whose key `key` names (EIP-55). */
  depositAddress(key: DepositKeyRef): Promise<`0x${string}`>;
  /** The gas account's address (EIP-55), or undefined when this signer holds none. */
  gasAccount(): Promise<`0x${string}` | undefined>;
  /** Signs `request.tx` with its key; answers the serialized signed transaction, or throws. */
  sign(request: SignRequest): Promise<Hex>;
}

/** viem's form of a transaction to sign. */
export function serializableOf(tx: UnsignedTx): TransactionSerializable {
  const common = {
    chainId: tx.chainId,
    nonce: tx.nonce,
    to: tx.to as Hex,
    value: BigInt(tx.value),
    gas: BigInt(tx.gas),
    ...(tx.data === undefined ? {} : { data: tx.data }),
  };
  return tx.gasPrice !== undefined
    ? { ...common, type: 'legacy', gasPrice: BigInt(tx.gasPrice) }
    : {
        ...common,
        type: 'eip1559',
        maxFeePerGas: BigInt(tx.maxFeePerGas ?? '0'),
        maxPriorityFeePerGas: BigInt(tx.maxPriorityFeePerGas ?? '0'),
      };
}

/**
 * The signer of the key files (DEPOSIT_SEED_FILE and REFUND_GAS_KEY_FILE), read once, at
 * construction: a file that is missing, malformed, or that group or others may read throws naming
 * the file, never its content (the process refuses to start). Nothing is created.
 */
export class LocalSigner implements Signer {
  private readonly seed: Uint8Array;
  private readonly gas?: GasAccountSigner;

  constructor(files: { seedFile: string; gasKeyFile?: string }) {
    this.seed = readDepositSeed(files.seedFile);
    if (files.gasKeyFile !== undefined) this.gas = readGasAccountKey(files.gasKeyFile);
  }

  private keyOf(key: DepositKeyRef): `0x${string}` {
    return depositKey(this.seed, key.chain, key.workflowId, key.derivation);
  }

  async depositAddress(key: DepositKeyRef): Promise<`0x${string}`> {
    return privateKeyToAccount(this.keyOf(key)).address;
  }

  async gasAccount(): Promise<`0x${string}` | undefined> {
    return this.gas?.address;
  }

  async sign(request: SignRequest): Promise<Hex> {
    const tx = serializableOf(request.tx);
    if (request.kind !== 'top-up') return privateKeyToAccount(this.keyOf(request.key)).signTransaction(tx);
    if (!this.gas) throw new Error('this signer holds no gas account key (REFUND_GAS_KEY_FILE)');
    return this.gas.sign(tx);
  }
}
