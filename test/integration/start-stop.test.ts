import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../config/config';

/**
 * Ctrl-C in a terminal signals the whole foreground process group. The launcher (`npm start`,
 * `npm run cluster`) must be the only one to hear it, and stop its parts in its own order: the
 * parts that use others first, so that none of them sees another vanish under it.
 */
describe('start and stop: Ctrl-C reaches the launcher alone, and it stops its parts in order', function () {
  this.timeout(30_000);

  it("when the launcher and its parts get SIGINT as a terminal sends it (to the process group), then the parts stop newest first on the launcher's SIGTERM, none sees SIGINT, and none logs a connection error", async () => {
    const launcher = spawn(process.execPath, [path.join(projectRoot, 'dist', 'test', 'support', 'supervised-parts.js')], {
      // A group of its own, as a shell gives a foreground job: the test signals that group.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    let buffered = '';
    const up = new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        const parts = buffered.split('\n');
        buffered = parts.pop() ?? '';
        lines.push(...parts);
        if (parts.some((l) => l.includes('parts up'))) resolve();
      };
      launcher.stdout.on('data', onData);
      launcher.stderr.on('data', onData);
      launcher.once('exit', (code) => reject(new Error(`the launcher exited (${code}) before its parts were up:\n${lines.join('\n')}`)));
    });
    const exited = new Promise<number | null>((resolve) => launcher.once('exit', (code) => resolve(code)));
    await up;
    // Let the client poll a few times, then signal the whole group, as the terminal does.
    await new Promise((r) => setTimeout(r, 200));
    process.kill(-launcher.pid!, 'SIGINT');
    assert.equal(await exited, 0, lines.join('\n'));
    const said = lines.filter((l) => /stopping|got SIGINT|connection error|all stopped/.test(l));
    assert.deepEqual(said, [
      '[parts] stopping client',
      '[client] client stopping',
      '[parts] stopping server',
      '[server] server stopping',
      '[parts] all stopped',
    ]);
  });
});
