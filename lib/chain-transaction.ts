import { TransactionNotFoundError, TransactionReceiptNotFoundError, type PublicClient } from 'viem';
import { TX_HASH, type ChainTransaction } from '../domain/deposit-proof';

/**
 * Reads what the chain holds of one transaction and the chain's head, for domain/deposit-proof.
 * A hash the node does not know is `tx: undefined`; a node that cannot be reached throws.
 */
export async function readChainTransaction(client: PublicClient, txHash: string): Promise<{ tx?: ChainTransaction; head: number }> {
  const head = Number(await client.getBlockNumber({ cacheTime: 0 }));
  if (!TX_HASH.test(txHash)) return { head };
  const hash = txHash.toLowerCase() as `0x${string}`;
  try {
    const tx = await client.getTransaction({ hash });
    if (tx.blockNumber === null)
      return { head, tx: { to: tx.to?.toLowerCase() ?? null, value: tx.value.toString(), blockNumber: null, succeeded: false } };
    const receipt = await client.getTransactionReceipt({ hash });
    return {
      head,
      tx: {
        to: tx.to?.toLowerCase() ?? null,
        value: tx.value.toString(),
        blockNumber: Number(receipt.blockNumber),
        succeeded: receipt.status === 'success',
      },
    };
  } catch (err) {
    if (err instanceof TransactionNotFoundError || err instanceof TransactionReceiptNotFoundError) return { head };
    throw err;
  }
}
