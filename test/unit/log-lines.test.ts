import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger } from '../../config/logger';
import { notPinoLines } from '../support/log-lines';

describe('log lines: one format, pino as config/logger.ts makes it', () => {
  it("when a line is written by the service's logger, then it passes; a line built by hand (no time, no pid), text or a stack trace does not", () => {
    const lines: string[] = [];
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, done) => (lines.push(...chunk.toString().trimEnd().split('\n')), done()),
    });
    const logger = createLogger('worker', 'info', sink);
    logger.error({ err: 'connection refused' }, 'read model catch-up failed; trying again in 5 s');
    logger.info('worker stopped');
    assert.equal(lines.length, 2);
    assert.deepEqual(notPinoLines(lines), []);
    const others = [
      JSON.stringify({ level: 'error', msg: 'read model catch-up failed; trying again in 5 s', err: 'connection refused' }),
      'worker failed: Error: boom',
      '    at main (/srv/dist/worker/main.js:1:1)',
      '[1,2]',
      '',
    ];
    assert.deepEqual(notPinoLines(others), others);
  });
});
