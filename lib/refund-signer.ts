/**
 * Who signs a refund from a deposit address: one small interface, so that a KMS or an HSM can take
 * the seed file's place without touching the workflows or the activities (docs/decisions/0081).
 */
import type { Hex, TransactionSerializable } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { depositPrivateKey } from '../domain/deposit-key';
import { readDepositSeed } from './deposit-seed';

export interface RefundSigner {
  /** The address the signer holds the key of for an execution's deposit on `chain` (EIP-55). */
  address(chain: string, workflowId: string): Promise<`0x${string}`>;
  /** Signs `tx` with that key; answers the serialized signed transaction. */
  sign(chain: string, workflowId: string, tx: TransactionSerializable): Promise<Hex>;
}

/**
 * The signer of the deposit seed file (DEPOSIT_SEED_FILE): read at the first signature, never
 * created (the API creates the seed; a worker that made up its own would derive other addresses).
 * A file that is missing or malformed throws naming the file, never its content.
 */
export class SeedFileSigner implements RefundSigner {
  private seed?: Uint8Array;

  constructor(private readonly file: string) {}

  private read(): Uint8Array {
    this.seed ??= readDepositSeed(this.file);
    return this.seed;
  }

  async address(chain: string, workflowId: string): Promise<`0x${string}`> {
    return privateKeyToAccount(depositPrivateKey(this.read(), chain, workflowId)).address;
  }

  async sign(chain: string, workflowId: string, tx: TransactionSerializable): Promise<Hex> {
    return privateKeyToAccount(depositPrivateKey(this.read(), chain, workflowId)).signTransaction(tx);
  }
}
