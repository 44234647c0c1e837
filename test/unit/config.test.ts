import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../config/config';
import { SETTINGS } from '../../config/settings';
import { readSettings, readSettingsOf } from '../../config/read-settings';
import { renderSettingsTable, renderToolSettingsTable } from '../../config/settings-docs';
import { TEST_SETTINGS } from '../support/settings';
import { TOOL_SETTINGS } from '../../scripts/settings-table';
import { docSection } from '../../scripts/lib/doc-section';

describe('config: operator endpoints', () => {
  it('when HOST is 0.0.0.0 and OPERATOR_HOST is unset, then every operator endpoint (API operator port, worker metrics) binds loopback', () => {
    const config = loadConfig({ HOST: '0.0.0.0' });
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.operatorHost, '127.0.0.1');
    assert.equal(config.operator?.host, '127.0.0.1');
  });

  it('when OPERATOR_HOST is set, then the operator endpoints bind it: the one explicit way to expose them', () => {
    const config = loadConfig({ HOST: '0.0.0.0', OPERATOR_HOST: '10.1.2.3' });
    assert.equal(config.operatorHost, '10.1.2.3');
    assert.equal(config.operator?.host, '10.1.2.3');
  });
});

describe('config: rate limits and trusted proxies', () => {
  it('when nothing is set, then the documented defaults apply and no proxy is trusted', () => {
    const config = loadConfig({});
    assert.deepEqual(config.rateLimits, { windowS: 10, perIp: 200, perWallet: 100, perToken: 2000, authFailuresPerIp: 20 });
    assert.deepEqual(config.trustProxy, []);
  });

  it('when the env sets limits and TRUST_PROXY, then they win over the file, and 0 turns a limit off', () => {
    const config = loadConfig({
      RATE_LIMIT_WINDOW_S: '60',
      RATE_LIMIT_PER_IP: '0',
      RATE_LIMIT_PER_WALLET: '7',
      RATE_LIMIT_PER_TOKEN: '9',
      TRUST_PROXY: 'loopback, 10.0.0.0/8',
    });
    assert.deepEqual(config.rateLimits, { windowS: 60, perIp: 0, perWallet: 7, perToken: 9, authFailuresPerIp: 20 });
    assert.deepEqual(config.trustProxy, ['loopback', '10.0.0.0/8']);
  });

  it('when a token the service may pay back by itself (REFUND_LIMITS) has no REFUND_MINIMUMS entry, then loading fails naming it; with one, or without a limit, it loads', () => {
    const USDC = '0x' + 'a0'.repeat(20);
    const tokens = { CHAIN_RPC_URL: 'http://127.0.0.1:8545', DEPOSIT_TOKENS: `evm:1:${USDC}=USDC:6` };
    assert.throws(
      () => loadConfig({ ...tokens, REFUND_LIMITS: 'evm:1:USDC=1000000000' }),
      (err: Error) =>
        err instanceof ConfigError && /REFUND_MINIMUMS sets no minimum for it/.test(err.message) && /evm:1:USDC/.test(err.message),
    );
    assert.ok(loadConfig({ ...tokens, REFUND_LIMITS: 'evm:1:USDC=1000000000', REFUND_MINIMUMS: `evm:1:${USDC}=1000000` }));
    assert.ok(loadConfig(tokens), 'no limit: every row of it is held for a person, no gas spent');
  });

  it('when TRUST_PROXY or a limit is malformed, then loading fails with a ConfigError naming it', () => {
    assert.throws(
      () => loadConfig({ TRUST_PROXY: 'not-an-address' }),
      (err: Error) => err instanceof ConfigError && /TRUST_PROXY/.test(err.message),
    );
    assert.throws(
      () => loadConfig({ RATE_LIMIT_PER_IP: '-1' }),
      (err: Error) => err instanceof ConfigError && /RATE_LIMIT_PER_IP/.test(err.message),
    );
    assert.throws(
      () => loadConfig({ RATE_LIMIT_WINDOW_S: '0' }),
      (err: Error) => err instanceof ConfigError && /RATE_LIMIT_WINDOW_S/.test(err.message),
    );
  });
});

describe('config: one table of settings (config/settings.ts)', () => {
  const root = path.resolve(__dirname, '..', '..', '..');

  it('when docs/configuration.md is read, then its Settings table is the one rendered from the table (npm run docs:settings)', () => {
    const text = readFileSync(path.join(root, 'docs', 'configuration.md'), 'utf8');
    assert.equal(docSection(text, 'settings-table'), renderSettingsTable().trim(), 'run `npm run docs:settings`');
  });

  it("when docs/development.md is read, then its table of the tools' settings is the one rendered from their tables, and no variable is in two tables", () => {
    const text = readFileSync(path.join(root, 'docs', 'development.md'), 'utf8');
    assert.equal(docSection(text, 'tool-settings-table'), renderToolSettingsTable(TOOL_SETTINGS).trim(), 'run `npm run docs:settings`');
    const names = [SETTINGS, ...TOOL_SETTINGS].flatMap((table) => Object.keys(table));
    assert.deepEqual(
      names.filter((name, i) => names.indexOf(name) !== i),
      [],
    );
  });

  it('when the source is searched, then the environment is read only in config/ (entry points get their settings from there too)', () => {
    const needle = new RegExp(['process', 'env'].join('\\.') + '\\b'); // spelled apart so that this file does not match
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) {
          if (!['node_modules', 'dist', 'data', '.git', 'config'].includes(entry.name)) walk(full);
        } else if (entry.name.endsWith('.ts') && needle.test(readFileSync(full, 'utf8'))) {
          offenders.push(path.relative(root, full));
        }
      }
    };
    walk(root);
    assert.deepEqual(offenders, []);
  });

  it('when the shell scripts read a variable, then it is a row of the table (or a standard one: HOME, XDG_CACHE_HOME, GOFLAGS)', () => {
    const standard = new Set(['HOME', 'XDG_CACHE_HOME', 'GOFLAGS', 'PATH']);
    const dir = path.join(root, 'scripts');
    const read = new Set<string>();
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.sh')))
      for (const m of readFileSync(path.join(dir, file), 'utf8').matchAll(/\$\{([A-Z][A-Z0-9_]*)/g)) read.add(m[1]);
    assert.ok(read.size > 0, 'the scan found the scripts');
    assert.deepEqual(
      [...read].filter((name) => !standard.has(name) && !(name in SETTINGS) && !TOOL_SETTINGS.some((table) => name in table)),
      [],
    );
  });

  it('when a variable is malformed, then readSettings fails with a ConfigError naming it and what it must be', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ PORT: '70000' }, /PORT must be an integer of 0\.\.65535/],
      [{ PORT: '1e3' }, /PORT must be an integer/],
      [{ SHUTDOWN_GRACE_MS: '-5' }, /SHUTDOWN_GRACE_MS must be an integer/],
      [{ WORKER_METRICS_PORT: 'none' }, /WORKER_METRICS_PORT must be an integer of 0\.\.65535 or "off"/],
      [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of fatal, error, warn, info/],
      [{ TEMPORAL_TLS: 'yes' }, /TEMPORAL_TLS must be 1 \(on\) or 0 \(off\)/],
      [{ LOAD_SCALE: '0' }, /LOAD_SCALE must be a number of at least 0\.001/],
      [{ TEST_TEMPORAL: 'prod' }, /TEST_TEMPORAL must be one of dev, cluster/],
    ];
    for (const [env, message] of cases) {
      assert.throws(
        () => [SETTINGS, ...TOOL_SETTINGS].forEach((table) => readSettingsOf(table, env)),
        (err: Error) => err instanceof ConfigError && message.test(err.message),
        JSON.stringify(env),
      );
    }
  });

  it('when variables are set well, then they are parsed to their types; unset and empty ones are absent', () => {
    const s = readSettings({
      PORT: ' 8080 ',
      WORKER_METRICS_PORT: 'off',
      SDK_LOG_LEVEL: 'info',
      STORAGE_NODES: 'http://a:1, ,http://b:2',
      TEMPORAL_TLS: '1',
      LOAD_SCALE: '0.1',
      HOST: '',
    });
    assert.deepEqual(
      { ...readSettingsOf(TEST_SETTINGS, { LOAD_SCALE: '0.1', LOAD_SEED: ' ', PORT: '1' }) },
      { LOAD_SCALE: 0.1 },
      'a tool table reads only its own',
    );
    assert.deepEqual(
      { ...s },
      {
        PORT: 8080,
        WORKER_METRICS_PORT: 'off',
        SDK_LOG_LEVEL: 'INFO',
        STORAGE_NODES: ['http://a:1', 'http://b:2'],
        TEMPORAL_TLS: true,
      },
    );
  });

  it('when loadConfig runs, then each value is the env one, else the file one, else the default of the table', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'config-test-'));
    const file = path.join(dir, 'service.json');
    writeFileSync(file, JSON.stringify({ port: 4000, envelopeMaxAgeS: 60 }));
    const config = loadConfig({ CONFIG_FILE: file, ENVELOPE_MAX_AGE_S: '30', WORKER_METRICS_PORT: 'off', SDK_LOG_LEVEL: 'debug' });
    assert.equal(config.port, 4000, 'file');
    assert.equal(config.envelopeMaxAgeS, 30, 'env over file');
    assert.equal(config.bodyLimitBytes, SETTINGS.BODY_LIMIT_BYTES.default, 'table default');
    assert.equal(config.shutdownGraceMs, SETTINGS.SHUTDOWN_GRACE_MS.default);
    assert.equal(config.workerMetricsPort, undefined, 'off: no metrics endpoint');
    assert.equal(config.sdkLogLevel, 'DEBUG');
    assert.equal(config.workerCachedWorkflows, 400, 'the sticky cache default');
    assert.equal(loadConfig({ CONFIG_FILE: file, WORKER_CACHED_WORKFLOWS: '0' }).workerCachedWorkflows, 0, '0: no cache');
    writeFileSync(file, JSON.stringify({ port: 70000 }));
    assert.throws(
      () => loadConfig({ CONFIG_FILE: file }),
      (err: Error) => err instanceof ConfigError && /port must be <= 65535/.test(err.message),
    );
  });
});
