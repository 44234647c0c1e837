import assert from 'node:assert/strict';
import type { LogMetadata } from '@temporalio/worker';
import pino from 'pino';
import { Writable } from 'node:stream';
import { CORE_WEDGE_LINE, coreWedgeListener } from '../../worker/core-wedge';
import { pinoSdkLogger } from '../../worker/sdk-logger';

describe('worker/core-wedge: hearing the core say it wedged a run', () => {
  /** An SDK logger over a real pino logger whose JSON lines are kept, with the wedge listener on it. */
  const logged = (onWedge: (meta: LogMetadata | undefined) => void) => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
        done();
      },
    });
    return { lines, sdk: pinoSdkLogger(pino({ level: 'trace' }, sink), coreWedgeListener(onWedge)) };
  };

  it('when the core logs the wedge line, at any level and with a suffix, then onWedge gets its metadata once per line and the line is still logged', () => {
    const heard: Array<LogMetadata | undefined> = [];
    const { lines, sdk } = logged((meta) => heard.push(meta));
    sdk.error(`${CORE_WEDGE_LINE}: run 7`, { run_id: 'r7' });
    sdk.log('WARN', CORE_WEDGE_LINE, { run_id: 'r8' });
    assert.deepEqual(heard, [{ run_id: 'r7' }, { run_id: 'r8' }]);
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg, l.run_id]),
      [
        [50, `${CORE_WEDGE_LINE}: run 7`, 'r7'],
        [40, CORE_WEDGE_LINE, 'r8'],
      ],
    );
  });

  it('when the core logs anything else, including the other buffered-task line, then onWedge is not called', () => {
    let heard = 0;
    const { lines, sdk } = logged(() => heard++);
    sdk.warn('There were leftover buffered tasks when evicting run');
    sdk.info('Buffering WFT because cache is full');
    sdk.error('Extra buffered run');
    assert.equal(heard, 0);
    assert.equal(lines.length, 3);
  });
});
