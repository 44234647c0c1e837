import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const loggerModule = path.join(__dirname, '..', '..', 'config', 'logger.js');

describe('config/logger exitAfterFlush', () => {
  it('when a process exits right after its last lines (one still being written to a pipe), then every line comes out whole and in order', async () => {
    // A 1 MB line cannot go into a pipe in one write: its write is in flight when the next line is
    // logged and the process exits in the same tick, as the API does after "api stopped".
    const script = `
      const { createLogger, exitAfterFlush } = require(${JSON.stringify(loggerModule)});
      const logger = createLogger('exit-test', 'info');
      logger.info({ filler: 'x'.repeat(1024 * 1024) }, 'request');
      logger.info('stopped');
      exitAfterFlush(logger, 0);`;
    const { stdout } = await run(process.execPath, ['-e', script], { maxBuffer: 16 * 1024 * 1024 });
    const lines = stdout.split('\n').filter((l) => l.length > 0);
    assert.deepEqual(
      lines.map((l) => JSON.parse(l).msg),
      ['request', 'stopped'],
    );
    assert.equal(JSON.parse(lines[0]).filler.length, 1024 * 1024);
  });
});
