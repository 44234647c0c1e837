/**
 * Who signs a refund from a deposit address: one small interface, so that a KMS or an HSM can take
 * the seed file's place without touching the workflows or the activities (docs/decisions/0081).
 */
import type { Hex, TransactionSerializable } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { KeyDerivation } from '../domain/deposit-key';
import { depositKey, readDepositSeed } from './deposit-seed';

/** Which deposit address's key: its execution on a chain, and how the key derives (recorded when the address was registered). */
export interface DepositKeyRef {
  chain: string;
  workflowId: string;
  derivation: KeyDerivation;
}

export interface RefundSigner {
  /** The address the signer holds the key of for `key` (EIP-55). */
  address(key: DepositKeyRef): Promise<`0x${string}`>;
  /** Signs `tx` with that key; answers the serialized signed transaction. */
  sign(key: DepositKeyRef, tx: TransactionSerializable): Promise<Hex>;
}

/**
 * The signer of the deposit seed file (DEPOSIT_SEED_FILE): read once, at construction (a file
 * that is missing, malformed, or that group or others may read throws naming the file, never its
 * content: the worker refuses to start), never created.
 */
export class SeedFileSigner implements RefundSigner {
  private readonly seed: Uint8Array;

  constructor(file: string) {
    this.seed = readDepositSeed(file);
  }

  async address(key: DepositKeyRef): Promise<`0x${string}`> {
    return privateKeyToAccount(depositKey(this.seed, key.chain, key.workflowId, key.derivation)).address;
  }

  async sign(key: DepositKeyRef, tx: TransactionSerializable): Promise<Hex> {
    return privateKeyToAccount(depositKey(this.seed, key.chain, key.workflowId, key.derivation)).signTransaction(tx);
  }
}
