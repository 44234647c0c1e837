import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { temporalBinary } from '../../scripts/lib/temporal-binary';
import { readDevServerSettings, startDevServer, startDevServerOnFreePort } from '../../scripts/lib/temporal-dev-server';
import { freePort } from '../support/ports';

/** The test stacks' dev servers: a port taken between its pick and the server's bind. */
describe('dev server start: a port taken after it was picked', function () {
  this.timeout(60_000);
  let taken: net.Server;
  let takenPort: number;
  let dir: string;
  // The readiness probe connects to the port's holder too: its connections end with the test.
  const connections = new Set<net.Socket>();
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dev-server-start-'));
    taken = net.createServer((socket) => connections.add(socket));
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    takenPort = (taken.address() as net.AddressInfo).port;
  });
  after(async () => {
    for (const socket of connections) socket.destroy();
    await new Promise((resolve) => taken.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  const settingsFor = (port: number) =>
    readDevServerSettings({ port, headless: true, logLevel: 'error', dbFilename: path.join(dir, `${port}.sqlite`) });

  it('when the server cannot bind its port, then the error says why, with the exit code and the server’s own words', async () => {
    await assert.rejects(startDevServer(temporalBinary(), settingsFor(takenPort)), (err: Error) => {
      assert.match(err.message, /exited before it was ready \(exit code \d+\); its last output:\n[\s\S]*address already in use/);
      return true;
    });
  });

  it('when the picked port is taken by the time the server binds it, then it is started again on a newly picked port', async () => {
    const picks = [takenPort];
    const { server, settings } = await startDevServerOnFreePort(temporalBinary(), settingsFor, async () => picks.shift() ?? freePort());
    try {
      assert.notEqual(settings.port, takenPort);
      assert.equal(server.address, `127.0.0.1:${settings.port}`);
    } finally {
      await server.stop();
    }
  });

  it('when the server panics on a port in use and its stack fills the tail it is quoted by, then the error still names the panic and a new port is picked', async () => {
    // A stand-in for the binary that panics the way the server's fx start does: the reason, then a long stack.
    const fake = path.join(dir, 'panicking-server.sh');
    const stack = Array.from({ length: 60 }, (_, i) => `\tgithub.com/example/frame${i}.go:${i}`).join('\n');
    writeFileSync(
      fake,
      `#!/bin/sh\necho 'panic: listen tcp 127.0.0.1:1: bind: address already in use' >&2\nprintf '${stack}\\n' >&2\nexit 2\n`,
      {
        mode: 0o755,
      },
    );
    await assert.rejects(startDevServer(fake, settingsFor(await freePort())), (err: Error) => {
      assert.match(
        err.message,
        /\(exit code 2\); it said: panic: listen tcp 127\.0\.0\.1:1: bind: address already in use; its last output:/,
      );
      return true;
    });
    const tried: number[] = [];
    const started = startDevServerOnFreePort(fake, settingsFor, async () => {
      tried.push(await freePort());
      return tried[tried.length - 1]!;
    });
    await assert.rejects(started, /it said: panic/);
    assert.ok(tried.length > 1, `a port in use is tried again on another: ${tried.length} tries`);
  });
});
