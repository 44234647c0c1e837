import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfigOf, projectRoot, type ApiConfig, type WorkerConfig } from '../../config/config';
import { readByNames } from '../../config/derive-config';
import { SETTINGS, type SettingName } from '../../config/settings';
import {
  configPathsOfSettings,
  configPathsRead,
  declaredConfigPaths,
  declaredPathOf,
  importClosure,
  readsAny,
  repositoryProgram,
  type ConfigReads,
} from '../support/config-reads';

const PROCESSES = { api: 'api/main.ts', worker: 'worker/main.ts' } as const;
type Process = keyof typeof PROCESSES;

describe('settings: the "read by" column is what the API and the worker read (docs/configuration.md "Settings")', function () {
  // One TypeScript program of the repository and its type checker: seconds.
  this.timeout(180_000);
  let reads: Record<Process, ConfigReads>;
  let filled: Map<SettingName, string[]>;

  before(() => {
    const program = repositoryProgram();
    const declared = declaredConfigPaths(program);
    reads = {
      api: configPathsRead(program, importClosure(program, PROCESSES.api)),
      worker: configPathsRead(program, importClosure(program, PROCESSES.worker)),
    };
    filled = new Map([...configPathsOfSettings()].map(([name, paths]) => [name, paths.map((p) => declaredPathOf(declared, p))]));
  });

  it('when a setting is loaded, then it fills a field of the Config (the scan can see who reads it)', () => {
    assert.deepEqual(
      [...filled].filter(([, paths]) => paths.length === 0).map(([name]) => name),
      [],
    );
  });

  it('when the API or the worker reads a field a setting fills, then its row lists that process, and it lists no process that does not', () => {
    const wrong: string[] = [];
    for (const name of Object.keys(SETTINGS) as SettingName[]) {
      const listed = (SETTINGS[name] as { readBy: string }).readBy.split(', ').filter((p): p is Process => p in PROCESSES);
      const readers =
        name === 'CONFIG_FILE'
          ? (Object.keys(PROCESSES) as Process[]).filter((p) =>
              /loadConfig(Of)?\(/.test(readFileSync(path.join(projectRoot, PROCESSES[p]), 'utf8')),
            )
          : (Object.keys(PROCESSES) as Process[]).filter((p) => readsAny(reads[p], filled.get(name)!));
      if (listed.join(', ') !== readers.join(', '))
        wrong.push(`${name}: the row says "${listed.join(', ')}", the code: "${readers.join(', ')}"`);
    }
    assert.deepEqual(wrong, []);
  });

  it('when the API hands the webhooks or the chain confirmations on at prepare, then the scan sees it (it can fail)', () => {
    assert.ok(readsAny(reads.api, ['webhooks']), 'the API reads config.webhooks (prepare records whether an execution has webhooks)');
    assert.ok(readsAny(reads.api, ['chain.confirmations']), 'the API reads the confirmations (prepare and deposit proofs)');
    assert.ok(!readsAny(reads.api, ['refunds.limits']), 'the API never reads REFUND_LIMITS');
  });

  it('when a process loads its own config, then it holds exactly the settings whose row names it', () => {
    const wrong: string[] = [];
    for (const reader of Object.keys(PROCESSES) as Process[]) {
      for (const [name, paths] of configPathsOfSettings(reader)) {
        if (name === 'CONFIG_FILE') continue;
        const listed = readByNames((SETTINGS[name] as { readBy: string }).readBy, reader);
        if (listed !== paths.length > 0)
          wrong.push(
            `${name}: the row ${listed ? 'names' : 'does not name'} ${reader}, its config ${paths.length > 0 ? `holds ${paths.join(', ')}` : 'holds nothing of it'}`,
          );
      }
    }
    assert.deepEqual(wrong, []);
  });

  it("when the API's code reads a worker-only setting, then it does not compile (and the other way round)", () => {
    const api: ApiConfig = loadConfigOf('api', { CONFIG_FILE: path.join(projectRoot, 'config', 'service.json') });
    const worker: WorkerConfig = loadConfigOf('worker', { CONFIG_FILE: path.join(projectRoot, 'config', 'service.json') });
    // @ts-expect-error WORKER_CACHED_WORKFLOWS is read by the worker alone
    assert.equal(api.workerCachedWorkflows, undefined);
    // @ts-expect-error PORT is read by the API alone
    assert.equal(worker.port, undefined);
    assert.equal(typeof api.port, 'number');
    assert.equal(typeof worker.workerCachedWorkflows, 'number');
  });
});
