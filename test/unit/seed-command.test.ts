import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../../db/database';
import { DepositAddressStore } from '../../db/deposit-addresses';
import { depositXpub } from '../../lib/deposit-derivation';
import { createDepositSeedFile, depositAddress, readDepositSeed } from '../../lib/deposit-seed';
import { seedCommand } from '../../scripts/seed';

describe('npm run seed: backing up the deposit seed and verifying a backup', () => {
  let dir: string;
  let seedFile: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seed-command-'));
    seedFile = path.join(dir, 'data', 'deposit-seed');
    createDepositSeedFile(seedFile);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** Every line the command printed, to check that no seed is among them. */
  const printed = (r: { out: string[]; err: string[] }) => [...r.out, ...r.err].join('\n');
  const seedHex = () => fs.readFileSync(seedFile, 'utf8').trim();

  it('when the seed is backed up and the backup verified, then both exit 0, the copy is 0600 and the same bytes, and no line prints the seed', async () => {
    const backup = path.join(dir, 'backups', 'seed.bak');
    const made = await seedCommand(['backup', backup], { seedFile });
    assert.equal(made.code, 0, printed(made));
    assert.equal(fs.statSync(backup).mode & 0o777, 0o600);
    assert.equal(fs.readFileSync(backup, 'utf8'), fs.readFileSync(seedFile, 'utf8'));
    assert.deepEqual(fs.readdirSync(path.dirname(backup)), ['seed.bak'], 'no temporary file is left beside it');
    const checked = await seedCommand(['verify', backup], { seedFile });
    assert.equal(checked.code, 0, printed(checked));
    assert.match(printed(checked), /same seed/);
    for (const r of [made, checked]) assert.ok(!printed(r).toLowerCase().includes(seedHex().toLowerCase()), 'the seed is never printed');
  });

  it('when the seed is created, then it is made once (0600) and never replaced; its public key is printed, written with --out, and an --out file holding another key is refused', async () => {
    const fresh = path.join(dir, 'fresh', 'deposit-seed');
    const made = await seedCommand(['create'], { seedFile: fresh });
    assert.equal(made.code, 0, printed(made));
    assert.match(printed(made), /created/);
    assert.equal(fs.statSync(fresh).mode & 0o777, 0o600);
    const before = fs.readFileSync(fresh, 'utf8');
    const again = await seedCommand(['create'], { seedFile: fresh });
    assert.equal(again.code, 0);
    assert.match(printed(again), /exists: unchanged/);
    assert.equal(fs.readFileSync(fresh, 'utf8'), before, 'never replaced');

    const shown = await seedCommand(['xpub'], { seedFile: fresh });
    assert.equal(shown.code, 0, printed(shown));
    assert.equal(shown.out[0], depositXpub(readDepositSeed(fresh)));
    const out = path.join(dir, 'api', 'deposit-xpub');
    fs.mkdirSync(path.dirname(out));
    const written = await seedCommand(['xpub', '--out', out], { seedFile: fresh });
    assert.equal(written.code, 0, printed(written));
    assert.equal(fs.readFileSync(out, 'utf8'), `${shown.out[0]}\n`);
    assert.equal((await seedCommand(['xpub', '--out', out], { seedFile: fresh })).code, 0, 'the same key again');
    const other = await seedCommand(['xpub', '--out', out], { seedFile });
    assert.equal(other.code, 1);
    assert.match(printed(other), /another key/);
    assert.equal(fs.readFileSync(out, 'utf8'), `${shown.out[0]}\n`, 'not replaced');
    for (const r of [made, shown, written]) assert.ok(!printed(r).includes(before.trim()), 'the seed is never printed');
  });

  it('when a backup holds another seed, then verify exits 1 and says so without printing either seed', async () => {
    const other = path.join(dir, 'other');
    fs.writeFileSync(other, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
    const r = await seedCommand(['verify', other], { seedFile });
    assert.equal(r.code, 1);
    assert.match(printed(r), /holds another seed/);
    assert.ok(!printed(r).includes(seedHex()) && !printed(r).includes(fs.readFileSync(other, 'utf8').trim()));
  });

  it('when the backup file exists already, then backup refuses (exit 2) and leaves it as it was', async () => {
    const existing = path.join(dir, 'existing');
    fs.writeFileSync(existing, 'precious\n');
    const r = await seedCommand(['backup', existing], { seedFile });
    assert.equal(r.code, 2);
    assert.match(printed(r), /exists: a backup never overwrites/);
    assert.equal(fs.readFileSync(existing, 'utf8'), 'precious\n');
  });

  it('when a file holds no seed, is missing, or the arguments are wrong, then the command exits 2 with a clear error', async () => {
    const bad = path.join(dir, 'bad');
    fs.writeFileSync(bad, 'not a seed\n', { mode: 0o600 });
    const malformed = await seedCommand(['verify', bad], { seedFile });
    assert.equal(malformed.code, 2);
    assert.match(printed(malformed), new RegExp(`${bad} must hold 64 hex digits`));
    const missing = await seedCommand(['verify', path.join(dir, 'nothing')], { seedFile });
    assert.equal(missing.code, 2);
    assert.match(printed(missing), /cannot read the deposit seed file/);
    const noConfigured = await seedCommand(['backup', path.join(dir, 'b')], { seedFile: path.join(dir, 'none') });
    assert.equal(noConfigured.code, 2, 'a backup never creates the seed it copies');
    assert.equal(fs.existsSync(path.join(dir, 'none')), false);
    assert.equal(fs.existsSync(path.join(dir, 'b')), false);
    for (const argv of [[], ['verify'], ['restore', bad], ['verify', bad, 'extra'], ['verify', bad, '--addresses', '-1'], ['--nope']])
      assert.equal((await seedCommand(argv, { seedFile })).code, 2, argv.join(' '));
  });

  it('when a backup is readable by others, then verify warns and still answers by its content', async () => {
    const loose = path.join(dir, 'loose');
    fs.copyFileSync(seedFile, loose);
    fs.chmodSync(loose, 0o644);
    const r = await seedCommand(['verify', loose], { seedFile });
    assert.equal(r.code, 0);
    assert.match(r.err.join('\n'), /readable by others .*chmod 600/);
  });

  describe('against a read model', () => {
    const registerFrom = async (sqliteFile: string, seed: Uint8Array, n: number) => {
      const database = await openDatabase({ sqliteFile });
      try {
        const store = new DepositAddressStore(database);
        for (let i = 0; i < n; i++) {
          const chain = i % 2 === 0 ? 'evm:31337' : 'evm:1';
          const workflowId = `exec:wallet${i}:e${i}`;
          // Addresses of both derivations: those issued before public derivation and the new ones.
          const derivation = i % 3 === 0 ? 'hmac-v0' : 'bip32-v1';
          await store.register({
            chain,
            address: depositAddress(seed, chain, workflowId, derivation),
            workflowId,
            minAmount: '1',
            derivation,
          });
        }
      } finally {
        await database.close();
      }
    };

    it('when its registered addresses derive from the backed-up seed, then verify counts each one it checked (at most --addresses) and exits 0', async () => {
      const sqliteFile = path.join(dir, 'read-model.sqlite');
      await registerFrom(sqliteFile, readDepositSeed(seedFile), 5);
      const backup = path.join(dir, 'seed.bak');
      assert.equal((await seedCommand(['backup', backup], { seedFile })).code, 0);
      const readModel = () => openDatabase({ sqliteFile });
      const all = await seedCommand(['verify', backup], { seedFile, readModel });
      assert.equal(all.code, 0, printed(all));
      assert.match(printed(all), /deposit addresses checked: 5, matching: 5/);
      const some = await seedCommand(['verify', backup, '--addresses', '3'], { seedFile, readModel });
      assert.match(printed(some), /deposit addresses checked: 3, matching: 3/);
      const none = await seedCommand(['verify', backup, '--addresses', '0'], { seedFile, readModel });
      assert.equal(none.code, 0);
      assert.doesNotMatch(printed(none), /deposit addresses checked/);
    });

    it('when its registered addresses derive from another seed, then verify exits 1 and names them, even though the files agree', async () => {
      const sqliteFile = path.join(dir, 'read-model.sqlite');
      await registerFrom(sqliteFile, randomBytes(32), 3);
      const r = await seedCommand(['verify', seedFile], { seedFile, readModel: () => openDatabase({ sqliteFile }) });
      assert.equal(r.code, 1);
      assert.match(printed(r), /deposit addresses checked: 3, matching: 0/);
      assert.match(printed(r), /is not the address .* derives for its execution/);
    });

    it('when the read model cannot be opened, then verify exits 2', async () => {
      const r = await seedCommand(['verify', seedFile], {
        seedFile,
        readModel: () => Promise.reject(new Error('connection refused')),
      });
      assert.equal(r.code, 2);
      assert.match(printed(r), /cannot read the read model's deposit addresses: connection refused/);
    });
  });
});
