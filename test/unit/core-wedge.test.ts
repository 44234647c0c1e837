import assert from 'node:assert/strict';
import type { LogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/worker';
import { CORE_WEDGE_LINE, watchForCoreWedge } from '../../worker/core-wedge';

describe('worker/core-wedge: hearing the core say it wedged a run', () => {
  const recording = () => {
    const lines: Array<[LogLevel, string, LogMetadata | undefined]> = [];
    const logger: SdkLogger = {
      log: (level, message, meta) => void lines.push([level, message, meta]),
      trace: (m, meta) => void lines.push(['TRACE', m, meta]),
      debug: (m, meta) => void lines.push(['DEBUG', m, meta]),
      info: (m, meta) => void lines.push(['INFO', m, meta]),
      warn: (m, meta) => void lines.push(['WARN', m, meta]),
      error: (m, meta) => void lines.push(['ERROR', m, meta]),
    };
    return { lines, logger };
  };

  it('when the core logs the wedge line, at any level and with a suffix, then onWedge gets its metadata once per line and the line is still logged', () => {
    const { lines, logger } = recording();
    const heard: Array<LogMetadata | undefined> = [];
    const watched = watchForCoreWedge(logger, (meta) => heard.push(meta));
    watched.error(`${CORE_WEDGE_LINE}: run 7`, { run_id: 'r7' });
    watched.log('WARN', CORE_WEDGE_LINE, { run_id: 'r8' });
    assert.deepEqual(heard, [{ run_id: 'r7' }, { run_id: 'r8' }]);
    assert.deepEqual(lines, [
      ['ERROR', `${CORE_WEDGE_LINE}: run 7`, { run_id: 'r7' }],
      ['WARN', CORE_WEDGE_LINE, { run_id: 'r8' }],
    ]);
  });

  it('when the core logs anything else, including the other buffered-task line, then onWedge is not called', () => {
    const { lines, logger } = recording();
    let heard = 0;
    const watched = watchForCoreWedge(logger, () => heard++);
    watched.warn('There were leftover buffered tasks when evicting run');
    watched.info('Buffering WFT because cache is full');
    watched.error('Extra buffered run');
    assert.equal(heard, 0);
    assert.equal(lines.length, 3);
  });
});
