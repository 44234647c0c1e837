/**
 * The gas account's key (REFUND_GAS_KEY_FILE): a file holding one private key, `0x` + 64 hex
 * digits. The account pays the fee of every token refund by topping its deposit address up first
 * (docs/decisions/0085); nothing derives it, so losing the file loses only what it holds.
 */
import type { Hex, TransactionSerializable } from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { createSecretFileOnce } from './durable-fs';
import { readPrivateFile } from './secret-file';

/** Who signs the gas account's transactions: one small interface, so that a KMS can take the file's place. */
export interface GasAccountSigner {
  /** The account's address (EIP-55). */
  readonly address: `0x${string}`;
  sign(tx: TransactionSerializable): Promise<Hex>;
}

/** The signer of the key in `file`. Throws naming the file (never the key) when it cannot be read, group or others may use it, or it holds no key. */
export function readGasAccountKey(file: string): GasAccountSigner {
  const text = readPrivateFile(file, 'gas account key file').trim();
  if (!/^0x[0-9a-f]{64}$/i.test(text)) throw new Error(`the gas account key file ${file} must hold 0x and 64 hex digits`);
  const account: PrivateKeyAccount = privateKeyToAccount(text as Hex);
  return { address: account.address, sign: (tx) => account.signTransaction(tx) };
}

/** Writes `privateKey` to `file` (0600) unless the file exists; answers whether it did (a launcher's dev chain account). */
export function writeGasAccountKeyOnce(file: string, privateKey: Hex): boolean {
  return createSecretFileOnce(file, () => `${privateKey}\n`);
}
