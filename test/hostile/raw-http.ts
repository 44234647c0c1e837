import { connect } from 'node:net';

/** What came back on the wire: the status line's code, lower-cased headers and the body bytes. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** True when the server reset or closed the connection after answering (e.g. a refused upload). */
  reset: boolean;
}

export interface RawRequest {
  method: string;
  /** The request target exactly as sent: any bytes, including ones fetch and node:http refuse. */
  target: string | Buffer;
  /** Header lines, in order, as sent (duplicates allowed). Content-Length is added for a body unless given or `chunked`. */
  headers?: Array<[string, string | Buffer]>;
  body?: Buffer | string;
  /** Send the body with Transfer-Encoding: chunked instead of Content-Length. */
  chunked?: boolean;
  timeoutMs?: number;
}

const CRLF = Buffer.from('\r\n');

/**
 * One HTTP/1.1 request over a fresh TCP connection (`Connection: close`), written byte for byte, so a
 * test can send what fetch and node:http refuse to: NUL and non-UTF-8 bytes in the path, duplicate
 * or malformed headers, a body far over the limit. Loopback only. Resolves with whatever status the
 * server wrote; rejects only when no status line came back at all.
 */
export function rawRequest(baseUrl: string, req: RawRequest): Promise<RawAnswer> {
  const url = new URL(baseUrl);
  if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost' && url.hostname !== '[::1]') {
    throw new Error(`rawRequest is for loopback only, not ${url.hostname}`);
  }
  const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body, 'utf8');
  const lines: Buffer[] = [
    Buffer.concat([
      Buffer.from(`${req.method} `, 'latin1'),
      Buffer.isBuffer(req.target) ? req.target : Buffer.from(req.target, 'latin1'),
      Buffer.from(' HTTP/1.1'),
    ]),
  ];
  const headers = req.headers ?? [];
  const has = (name: string) => headers.some(([h]) => h.toLowerCase() === name);
  lines.push(Buffer.from(`Host: ${url.host}`));
  for (const [name, value] of headers)
    lines.push(Buffer.concat([Buffer.from(`${name}: `, 'latin1'), Buffer.isBuffer(value) ? value : Buffer.from(value, 'latin1')]));
  if (!has('connection')) lines.push(Buffer.from('Connection: close'));
  if (body !== undefined) {
    if (req.chunked) lines.push(Buffer.from('Transfer-Encoding: chunked'));
    else if (!has('content-length')) lines.push(Buffer.from(`Content-Length: ${body.length}`));
  }
  const head = Buffer.concat([...lines.flatMap((l) => [l, CRLF]), CRLF]);

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let settled = false;
    let reset = false;
    const socket = connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) });
    const timer = setTimeout(() => finish(new Error(`no complete answer within ${req.timeoutMs ?? 15_000} ms`)), req.timeoutMs ?? 15_000);

    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const parsed = parseAnswer(Buffer.concat(chunks), reset);
      if (parsed) resolve(parsed);
      else reject(err ?? new Error(`no HTTP answer (${Buffer.concat(chunks).length} bytes received)`));
    };

    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      // Stop as soon as a whole answer is in: the server may still be discarding our upload.
      const parsed = parseAnswer(Buffer.concat(chunks), false);
      if (parsed && parsed.complete) finish();
    });
    socket.on('end', () => finish());
    socket.on('close', () => finish());
    socket.on('error', (err) => {
      reset = true;
      finish(err);
    });
    const sendBody = async () => {
      socket.write(head);
      if (body === undefined) return;
      // Large bodies go in slices, stopping once the server has answered (a refused upload).
      const slice = 16 * 1024;
      for (let at = 0; at < body.length && chunks.length === 0 && !socket.destroyed; at += slice) {
        const part = body.subarray(at, at + slice);
        const framed = req.chunked ? Buffer.concat([Buffer.from(part.length.toString(16) + '\r\n'), part, CRLF]) : part;
        if (!socket.write(framed))
          await new Promise<void>((r) => {
            socket.once('drain', r);
            socket.once('close', r);
          });
      }
      if (req.chunked && !socket.destroyed && chunks.length === 0) socket.write('0\r\n\r\n');
    };
    socket.on('connect', () => void sendBody());
  });
}

function parseAnswer(all: Buffer, reset: boolean): (RawAnswer & { complete: boolean }) | undefined {
  let end = all.indexOf('\r\n\r\n');
  // Skip interim answers (100 Continue for an `Expect: 100-continue`).
  while (end >= 0 && /^HTTP\/1\.[01] 1\d\d/.test(all.subarray(0, 12).toString('latin1'))) {
    all = all.subarray(end + 4);
    end = all.indexOf('\r\n\r\n');
  }
  if (end < 0) return undefined;
  const [statusLine, ...headerLines] = all.subarray(0, end).toString('latin1').split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!match) return undefined;
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = all.subarray(end + 4);
  let complete = false;
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    complete = body.length >= length;
    body = body.subarray(0, length);
  } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const decoded = decodeChunked(body);
    complete = decoded !== undefined;
    body = decoded ?? body;
  }
  return { status: Number(match[1]), headers, body, reset, complete };
}

function decodeChunked(data: Buffer): Buffer | undefined {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) return undefined;
    if (size === 0) return Buffer.concat(out);
    if (data.length < lineEnd + 2 + size + 2) return undefined;
    out.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/** The answer's body parsed as JSON, or undefined when it is not JSON. */
export function jsonOf(answer: RawAnswer): any {
  try {
    return JSON.parse(answer.body.toString('utf8'));
  } catch {
    return undefined;
  }
}
