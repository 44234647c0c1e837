import http from 'node:http';
import { readAnswer } from '../scripts/lib/read-answer';

/**
 * A lean JSON-over-HTTP client for load generation: node:http with keep-alive sockets, no
 * retries, no redirects. The load generator shares the machine with everything it measures, so it
 * should cost as little CPU per request as it can (global fetch costs several times more here).
 */
export class JsonClient {
  private readonly agent: http.Agent;

  constructor(maxSockets = 64) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  post(
    url: string,
    body: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }> {
    const payload = Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = http.request(
        url,
        {
          method: 'POST',
          agent: this.agent,
          headers: { 'content-type': 'application/json', 'content-length': payload.length, ...headers },
        },
        (res) =>
          void readAnswer(res).then((parsed) => resolve({ status: res.statusCode ?? 0, body: parsed, headers: res.headers }), reject),
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  /**
   * Closes the idle keep-alive sockets. After this process was busy (signing, a long direct run),
   * a socket the server closed on its keep-alive timeout may not be known as closed yet, and a
   * request sent on it fails with "socket hang up" without reaching the server.
   */
  dropIdle(): void {
    for (const sockets of Object.values(this.agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
  }

  close(): void {
    this.agent.destroy();
  }
}
