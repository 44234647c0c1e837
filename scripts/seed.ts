import { createHash, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/config';
import { openDatabase, type Database } from '../db/database';
import { DepositAddressStore } from '../db/deposit-addresses';
import path from 'node:path';
import type { KeyDerivation } from '../domain/deposit-key';
import { depositXpub } from '../lib/deposit-derivation';
import { createSecretFileOnce, replaceFileSync } from '../lib/durable-fs';
import { createDepositSeedFile, depositAddress, readDepositSeed } from '../lib/deposit-seed';

const USAGE = `usage: npm run --silent seed -- create
       npm run --silent seed -- xpub [--out FILE]
       npm run --silent seed -- backup FILE
       npm run --silent seed -- verify FILE [--addresses N]

The deposit seed (DEPOSIT_SEED_FILE): every deposit address's private key derives from it.
create  makes it (32 random bytes, 0600) when it does not exist; an existing seed is never replaced
xpub    prints the extended public key the APIs derive new deposit addresses from (DEPOSIT_XPUB_FILE);
        --out FILE writes it there (an existing FILE must hold the same key, else exit 1)
backup  copies it to FILE, created atomically and readable by its owner only (0600); an existing
        FILE is never overwritten (exit 2); then reads FILE back and checks it is the same seed
verify  checks FILE holds 64 hex digits and is the same seed as DEPOSIT_SEED_FILE (their digests
        are compared; neither seed is printed), then derives from FILE the deposit addresses of
        the N newest rows (default 100; 0: none) of the read model's deposit_addresses table
        (DATABASE_URL or DATABASE_FILE) and checks each is the address registered
Exit codes: 0 the same seed (and every address checked matches), 1 another seed or an address
that does not match, 2 a usage error or a file or read model that cannot be read or written.`;

/** What the command reads beside its arguments. */
export interface SeedCommandDeps {
  /** The configured seed file (DEPOSIT_SEED_FILE); it is never created here. */
  seedFile: string;
  /** Opens the read model for verify's address check (closed again by the command); undefined: no check. */
  readModel?: () => Promise<Database>;
}

export interface SeedCommandResult {
  out: string[];
  err: string[];
  code: number;
}

/** Most rows verify derives again. */
const MAX_ADDRESSES = 100_000;

const digest = (seed: Uint8Array) => createHash('sha256').update(seed).digest();

/** Runs one command; answers the lines to print and the exit code. Never prints a seed. */
export async function seedCommand(argv: string[], deps: SeedCommandDeps): Promise<SeedCommandResult> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { addresses: { type: 'string' }, out: { type: 'string' }, help: { type: 'boolean' } },
    });
  } catch (err) {
    return { out: [], err: [`seed: ${(err as Error).message}`, USAGE], code: 2 };
  }
  const { positionals, values } = parsed;
  if (values.help) return { out: [USAGE], err: [], code: 0 };
  const [command, file, ...rest] = positionals;
  const usage = (message?: string): SeedCommandResult => ({ out: [], err: [...(message ? [`seed: ${message}`] : []), USAGE], code: 2 });
  if (command === 'create' && file === undefined && values.addresses === undefined && values.out === undefined)
    return create(deps.seedFile);
  if (command === 'xpub' && file === undefined && values.addresses === undefined) return exportXpub(deps.seedFile, values.out);
  if ((command !== 'backup' && command !== 'verify') || file === undefined || rest.length > 0 || values.out !== undefined) return usage();
  const limit = Number(values.addresses ?? 100);
  if (command === 'backup' && values.addresses !== undefined) return usage('--addresses is for verify');
  if (!/^[0-9]+$/.test(values.addresses ?? '100') || limit > MAX_ADDRESSES) return usage(`--addresses must be 0 to ${MAX_ADDRESSES}`);

  let configured: Uint8Array;
  try {
    configured = readDepositSeed(deps.seedFile);
  } catch (err) {
    return { out: [], err: [`seed: ${(err as Error).message}`], code: 2 };
  }
  const out: string[] = [];
  if (command === 'backup') {
    let created: boolean;
    try {
      created = createSecretFileOnce(file, () => `${Buffer.from(configured).toString('hex')}\n`);
    } catch (err) {
      return { out: [], err: [`seed: cannot write ${file}: ${(err as Error).message}`], code: 2 };
    }
    if (!created) return { out: [], err: [`seed: ${file} exists: a backup never overwrites a file; name another one`], code: 2 };
    out.push(`wrote ${file} (0600)`);
  }

  let copy: Uint8Array;
  try {
    // A backup left readable by others is still compared (and warned about below).
    copy = readDepositSeed(file, { anyMode: true });
  } catch (err) {
    return { out, err: [`seed: ${(err as Error).message}`], code: 2 };
  }
  const err: string[] = [];
  const mode = fs.statSync(file).mode & 0o777;
  if ((mode & 0o077) !== 0)
    err.push(`seed: warning: ${file} is readable by others than its owner (mode ${mode.toString(8)}); chmod 600 it`);
  if (!timingSafeEqual(digest(copy), digest(configured)))
    return { out, err: [...err, `seed: ${file} holds another seed than DEPOSIT_SEED_FILE (${deps.seedFile})`], code: 1 };
  out.push(`${file} holds the same seed as DEPOSIT_SEED_FILE (${deps.seedFile})`);
  // A backup is a byte-for-byte copy of the seed just compared: deriving addresses from it again tells nothing more.
  if (command === 'backup' || limit === 0 || !deps.readModel) return { out, err, code: 0 };

  let rows: Array<{ chain: string; address: string; workflowId: string; derivation: KeyDerivation }>;
  try {
    const database = await deps.readModel();
    try {
      rows = await new DepositAddressStore(database).newest(limit);
    } finally {
      await database.close();
    }
  } catch (e) {
    return { out, err: [...err, `seed: cannot read the read model's deposit addresses: ${(e as Error).message}`], code: 2 };
  }
  const wrong = rows.filter((r) => depositAddress(copy, r.chain, r.workflowId, r.derivation).toLowerCase() !== r.address.toLowerCase());
  for (const r of wrong.slice(0, 10))
    err.push(`seed: ${r.address} on ${r.chain} (${r.workflowId}) is not the address ${file} derives for its execution`);
  out.push(`deposit addresses checked: ${rows.length}, matching: ${rows.length - wrong.length}`);
  return { out, err, code: wrong.length === 0 ? 0 : 1 };
}

/** `create`: the seed file, made once. */
function create(seedFile: string): SeedCommandResult {
  try {
    return createDepositSeedFile(seedFile)
      ? {
          out: [
            `created ${seedFile} (0600): back it up now (npm run seed -- backup FILE), then export its public key (npm run seed -- xpub)`,
          ],
          err: [],
          code: 0,
        }
      : { out: [`${seedFile} exists: unchanged (a seed is never replaced)`], err: [], code: 0 };
  } catch (err) {
    return { out: [], err: [`seed: cannot create ${seedFile}: ${(err as Error).message}`], code: 2 };
  }
}

/** `xpub`: the extended public key of the seed, printed, or written to `out`. */
function exportXpub(seedFile: string, out: string | undefined): SeedCommandResult {
  let xpub: string;
  try {
    xpub = depositXpub(readDepositSeed(seedFile));
  } catch (err) {
    return { out: [], err: [`seed: ${(err as Error).message}`], code: 2 };
  }
  if (out === undefined) return { out: [xpub], err: [], code: 0 };
  try {
    if (fs.existsSync(out)) {
      const held = fs.readFileSync(out, 'utf8').trim();
      return held === xpub
        ? { out: [`${out} holds this seed's public key already`], err: [], code: 0 }
        : {
            out: [],
            err: [`seed: ${out} holds another key than the public key of DEPOSIT_SEED_FILE (${seedFile}); not replaced`],
            code: 1,
          };
    }
    replaceFileSync(path.dirname(path.resolve(out)), out, Buffer.from(`${xpub}\n`), { mode: 0o644 });
  } catch (err) {
    return { out: [], err: [`seed: cannot write ${out}: ${(err as Error).message}`], code: 2 };
  }
  return { out: [`wrote ${out}: the public key the APIs read (DEPOSIT_XPUB_FILE)`], err: [], code: 0 };
}

async function main(argv: string[]): Promise<void> {
  const config = loadConfig();
  const { out, err, code } = await seedCommand(argv, {
    seedFile: config.depositSeedFile,
    readModel: () => openDatabase(config.database),
  });
  for (const line of out) console.log(line);
  for (const line of err) console.error(line);
  process.exitCode = code;
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    console.error('seed:', (err as Error).message);
    process.exit(2);
  });
}
