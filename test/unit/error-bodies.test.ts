import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Koa from 'koa';
import pino from 'pino';
import { errorMiddleware, type ErrorStyle } from '../../api/http/errors';
import { projectRoot } from '../../config/project-root';
import { ServiceError } from '../../domain/errors';

/** The body errorMiddleware renders for a 409 thrown under `style`. */
async function errorBody(style: ErrorStyle): Promise<Record<string, unknown>> {
  const app = new Koa();
  app.use(errorMiddleware(pino({ level: 'silent' })));
  app.use((ctx) => {
    ctx.state.errorStyle = style;
    throw new ServiceError(409, 'DEPOSIT_REFUSED', 'refused');
  });
  const handle = app.callback();
  const server = http.createServer((req, res) => void handle(req, res)).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    return (await response.json()) as Record<string, unknown>;
  } finally {
    server.close();
  }
}

// docs/api.md "Errors, retries and limits" states the bodies; the other pages link there.
describe('error bodies: as docs/api.md gives them', () => {
  it('when an execution or refunds route fails, then the body is { error, code }, as api.md says', async () => {
    assert.deepEqual(await errorBody('execution'), { error: 'refused', code: 'DEPOSIT_REFUSED' });
    const page = readFileSync(path.join(projectRoot, 'docs', 'api.md'), 'utf8');
    assert.match(page, /Execution and refunds routes answer errors as `\{ "error": string, "code": string \}`/);
  });

  it('when a whitelist route fails, then the body is { error: <status text>, errorMessage }, as api.md says', async () => {
    assert.deepEqual(await errorBody('whitelist'), { error: 'Conflict', errorMessage: 'refused' });
    const page = readFileSync(path.join(projectRoot, 'docs', 'api.md'), 'utf8');
    assert.match(page, /whitelist\s+routes as `\{ "error": <HTTP status text>, "errorMessage": string \}`/);
  });

  it('when a page other than api.md gives an error body, then it is not the bare { "error" } the API never answers', () => {
    const docs = path.join(projectRoot, 'docs');
    const found = readdirSync(docs)
      .filter((f) => f.endsWith('.md'))
      .flatMap((f) =>
        readFileSync(path.join(docs, f), 'utf8')
          .split('\n')
          .filter((line) => /`\{ ?"error"(: ?(string|"…"))? ?\}`/.test(line))
          .map((line) => `${f}: ${line.trim()}`),
      );
    assert.deepEqual(found, []);
  });
});
