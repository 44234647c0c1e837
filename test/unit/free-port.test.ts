import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { freePort } from '../../config/free-port';

describe('unit: freePort picks a port no outgoing connection can take first', () => {
  it('when a port is picked, then it lies below the ephemeral range (Linux: ip_local_port_range) and can be bound', async () => {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    for (let i = 0; i < 20; i++) {
      const port = await freePort();
      assert.ok(port >= 10_000 && port < low, `${port} is below ${low}`);
      const server = createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      });
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
