/**
 * The deposit key material of a stack the launcher owns (npm start's data/, a test's folder): the
 * seed made once, only while the read model holds no deposit address (a seed missing beside
 * addresses is lost, never replaced), and the public key the APIs read written from it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openDatabase, type DatabaseSettings } from '../../db/database';
import { DepositAddressStore } from '../../db/deposit-addresses';
import { depositXpub } from '../../lib/deposit-derivation';
import { createDepositSeedFile, readDepositSeed } from '../../lib/deposit-seed';
import { replaceFileSync } from '../../lib/durable-fs';

export interface DepositKeyFiles {
  /** DEPOSIT_SEED_FILE: the workers'. */
  seedFile: string;
  /** DEPOSIT_XPUB_FILE: the APIs'. */
  xpubFile: string;
  /** Whether the read model already holds deposit addresses (then a missing seed is an error). */
  holdsAddresses: () => Promise<boolean>;
}

/**
 * Makes the seed if it is missing and nothing was derived from one yet, then writes the public key
 * file if missing; throws naming the file when the seed is missing while addresses exist, when it
 * cannot be read (or group or others may), or when the public key file holds another key.
 * Answers what it made, for the launcher's log.
 */
export async function provisionDepositKeys(files: DepositKeyFiles): Promise<string[]> {
  const made: string[] = [];
  if (!fs.existsSync(files.seedFile)) {
    if (await files.holdsAddresses())
      throw new Error(
        `the deposit seed file ${files.seedFile} is missing while the read model holds deposit addresses derived from a seed: restore it from its backup (docs/backup.md); a new seed would not derive their keys`,
      );
    if (createDepositSeedFile(files.seedFile)) made.push(`created the deposit seed ${files.seedFile} (0600): back it up`);
  }
  const xpub = depositXpub(readDepositSeed(files.seedFile));
  if (!fs.existsSync(files.xpubFile)) {
    replaceFileSync(path.dirname(path.resolve(files.xpubFile)), files.xpubFile, Buffer.from(`${xpub}\n`), { mode: 0o644 });
    made.push(`wrote the deposit public key ${files.xpubFile}`);
  } else if (fs.readFileSync(files.xpubFile, 'utf8').trim() !== xpub)
    throw new Error(`${files.xpubFile} (DEPOSIT_XPUB_FILE) holds another key than the public key of the deposit seed ${files.seedFile}`);
  return made;
}

/** Whether the read model at `settings` holds any deposit address (it is opened, migrated, and closed again). */
export async function readModelHoldsAddresses(settings: DatabaseSettings): Promise<boolean> {
  const database = await openDatabase(settings);
  try {
    return (await new DepositAddressStore(database).newest(1)).length > 0;
  } finally {
    await database.close();
  }
}
