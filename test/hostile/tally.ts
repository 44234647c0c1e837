import { STATUS_CODES } from 'node:http';
import type { RawAnswer } from './raw-http';
import { jsonOf } from './raw-http';

/** Counts of what the hostile tests sent and what came back, printed once at the end. */
export class Tally {
  readonly byStatus = new Map<string, number>();
  readonly byProperty = new Map<string, number>();
  total = 0;
  /** Answers written by Node's HTTP parser before the app saw the request (no X-Request-Id). */
  parser = 0;
  private readonly started = Date.now();

  record(property: string, answer: RawAnswer): void {
    this.total++;
    this.byProperty.set(property, (this.byProperty.get(property) ?? 0) + 1);
    const key = String(answer.status);
    this.byStatus.set(key, (this.byStatus.get(key) ?? 0) + 1);
    if (answer.headers['x-request-id'] === undefined) this.parser++;
  }

  summary(): string {
    const statuses = [...this.byStatus]
      .sort()
      .map(([s, n]) => `${s}: ${n}`)
      .join(', ');
    const properties = [...this.byProperty].map(([p, n]) => `${p} ${n}`).join(', ');
    return [
      `hostile input: ${this.total} requests in ${((Date.now() - this.started) / 1000).toFixed(1)} s`,
      `  by status: ${statuses}`,
      `  answered by Node's HTTP parser before the app: ${this.parser}`,
      `  by property: ${properties}`,
    ].join('\n');
  }
}

export type ErrorStyle = 'execution' | 'whitelist';

export interface Expectation {
  /** Statuses the app may answer with (docs/api-executions.md "Routes", docs/api-whitelists.md "Changing entries"). */
  allowed: readonly number[];
  style: ErrorStyle;
  /** Whether Node's parser may refuse the request itself (bare 400, or 431 for a header section over 16 KiB). */
  parserMayRefuse?: boolean;
  /** A HEAD answer: headers only. */
  noBody?: boolean;
}

/**
 * Throws unless the answer is documented: a status from `allowed` (never a 5xx), an error body of the
 * route family's shape, a sane X-Request-Id; or, for bytes the HTTP parser refuses, its bare 400/431.
 */
export function assertDocumented(answer: RawAnswer, expect: Expectation, what: string): void {
  const fail = (why: string) => {
    throw new Error(`${what}: ${why} (status ${answer.status}, body ${answer.body.toString('utf8').slice(0, 300)})`);
  };
  if (answer.status >= 500) fail('a 5xx answer');
  const requestId = answer.headers['x-request-id'];
  if (requestId === undefined) {
    if (!expect.parserMayRefuse) fail('the HTTP parser refused a request that should have reached the app');
    if (answer.status !== 400 && answer.status !== 431) fail('the HTTP parser answered something other than 400 or 431');
    return;
  }
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(requestId)) fail(`X-Request-Id echoed unsanitised: ${JSON.stringify(requestId)}`);
  if (!expect.allowed.includes(answer.status)) fail(`status not among the documented ${expect.allowed.join('/')}`);
  if (answer.status < 400 || expect.noBody) return;
  if (!/^application\/json/.test(answer.headers['content-type'] ?? '')) fail('an error body that is not JSON');
  const body = jsonOf(answer);
  if (expect.style === 'whitelist') {
    if (!body || Object.keys(body).sort().join() !== 'error,errorMessage')
      fail('a whitelist error body that is not { error, errorMessage }');
    if (body.error !== STATUS_CODES[answer.status]) fail('error is not the status text');
    if (typeof body.errorMessage !== 'string' || body.errorMessage.length === 0) fail('errorMessage is not a string');
  } else {
    if (!body || Object.keys(body).join() !== 'error,code' || typeof body.error !== 'string' || body.error.length === 0)
      fail('an execution error body that is not { error: string, code: string }');
    else if (typeof body.code !== 'string' || !/^[A-Z_]+$/.test(body.code)) fail('an execution error code that is not an UPPER_SNAKE name');
  }
  if (answer.status === 401 && answer.headers['www-authenticate'] !== 'Bearer') fail('401 without WWW-Authenticate: Bearer');
}
