import type { DepositAddressStore } from '../db/deposit-addresses';
import type { KeyDerivation } from '../domain/deposit-key';
import type { Signer } from '../lib/signer';

/** Addresses of each derivation a worker derives again at start. */
const CHECKED_PER_DERIVATION = 3;

/**
 * Refuses a worker whose signer does not hold the keys of the read model's deposit addresses (a
 * seed restored from the wrong backup, another deployment's seed): the newest addresses of each
 * derivation must be the ones it derives, or this throws naming `source` (the seed file) and the
 * first address that differs. With no address registered yet there is nothing to compare.
 */
export async function checkDepositKeys(signer: Signer, addresses: DepositAddressStore, source: string): Promise<number> {
  let checked = 0;
  for (const derivation of ['hmac-v0', 'bip32-v1'] satisfies KeyDerivation[]) {
    for (const row of await addresses.newest(CHECKED_PER_DERIVATION, derivation)) {
      const derived = await signer.depositAddress({ chain: row.chain, workflowId: row.workflowId, derivation });
      if (derived.toLowerCase() !== row.address.toLowerCase())
        throw new Error(
          `${source} does not derive the read model's deposit address ${row.address} on ${row.chain} (${row.workflowId}, ${derivation}): it is not this deployment's deposit seed; restore the right one (docs/backup.md)`,
        );
      checked++;
    }
  }
  return checked;
}
