/**
 * A test build of the storage node: the real node (storage-node/main.ts) with faults injected
 * around its apply route, so that tests can make a running node slow, failing or unreadable. The
 * node itself has no fault code; only tests start this entry point:
 * `node dist/test/support/faulty-storage-node.js [--fault MODE] [--delay-ms N] <the node's flags>`.
 * `GET`/`POST /v1/faults` (signed like every node request) read and change the faults.
 */
import type { ServerResponse } from 'node:http';
import { parseArgs } from 'node:util';
import type { JSONSchemaType } from 'ajv';
import { badRequest } from '../../domain/errors';
import { checker } from '../../contracts/storage-node-protocol';
import { parseJson, sendJson, sendText } from '../../storage-node/http-io';
import { failedStart, refuseStart, runStorageNode } from '../../storage-node/main';
import { createLogger } from '../../config/logger';
import { USAGE, integerOption } from '../../storage-node/config';
import type { ApplyHandler, ExtraRoute } from '../../storage-node/routes';
import { valueOr400 } from '../../storage-node/validate';

export const FAULT_MODES = ['none', 'garbage', 'http500', 'truncated', 'wrong-shape'] as const;
/** How the apply route fails; `none` answers as the node does. */
export type FaultMode = (typeof FAULT_MODES)[number];

/** `/v1/faults` body and answer. */
export interface FaultSettings {
  delayMs: number;
  fault: FaultMode;
}

export const FAULTS_ROUTE = '/v1/faults';
/** This entry point, compiled: what the test stacks start their nodes with. */
export const FAULTY_NODE_SCRIPT = __filename;
/** Longest delay accepted, so a typo cannot park requests for hours. */
export const MAX_DELAY_MS = 10 * 60 * 1000;
/** The exact body of the `garbage` fault. */
export const GARBAGE_BODY = 'this is not json';

const faultUpdateSchema: JSONSchemaType<Partial<FaultSettings>> = {
  type: 'object',
  additionalProperties: false,
  required: [],
  properties: {
    delayMs: { type: 'integer', minimum: 0, nullable: true },
    fault: { type: 'string', enum: [...FAULT_MODES], nullable: true },
  },
};
const checkFaultUpdate = checker(faultUpdateSchema);

/** Checks a `POST /v1/faults` body and merges it over the current settings; a 400 on a wrong shape. */
export function parseFaultUpdate(value: unknown, current: FaultSettings): FaultSettings {
  const update = valueOr400(checkFaultUpdate(value), 'fault update');
  const delayMs = update.delayMs ?? current.delayMs;
  if (delayMs > MAX_DELAY_MS) throw badRequest(`delayMs must be an integer of 0..${MAX_DELAY_MS}`);
  return { delayMs, fault: update.fault ?? current.fault };
}

function sendTruncated(res: ServerResponse, text: string): void {
  const bytes = Buffer.from(text);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(bytes.length) });
  res.write(bytes.subarray(0, Math.floor(bytes.length / 2)));
  // Let the half body reach the client before the connection is torn down.
  setTimeout(() => res.destroy(), 20);
}

/**
 * The apply route with `faults` (read at each request, so changes apply to the next one). A
 * fault answers before the body is parsed: it stands for a node that is broken, not for one that
 * judged the request. The delay comes after the durable apply, so a slow node is late but not
 * lossy: the change is on disk even if the caller gave up waiting.
 */
export function faultyApply(faults: FaultSettings): ApplyHandler {
  return async ({ res, apply, send, sendError, pause }) => {
    let answer: () => void;
    if (faults.fault === 'http500') answer = () => sendJson(res, 500, { error: 'Internal Server Error' });
    else if (faults.fault === 'garbage') answer = () => sendText(res, 200, GARBAGE_BODY);
    else if (faults.fault === 'wrong-shape') answer = () => sendJson(res, 200, { ok: true });
    else {
      try {
        const response = apply();
        answer = faults.fault === 'truncated' ? () => sendTruncated(res, JSON.stringify(response)) : () => send(response);
      } catch (err) {
        answer = () => sendError(err);
      }
    }
    if (faults.delayMs > 0) await pause(faults.delayMs);
    answer();
  };
}

/** `GET /v1/faults` answers `faults`; `POST` merges a change into it. */
export function faultsRoute(faults: FaultSettings): ExtraRoute {
  return (pathname, req, res, body) => {
    if (pathname !== FAULTS_ROUTE) return false;
    if (req.method === 'POST') Object.assign(faults, parseFaultUpdate(parseJson(body), faults));
    else if (req.method !== 'GET') {
      res.setHeader('allow', 'GET, POST');
      sendJson(res, 405, { error: 'method not allowed; use GET or POST' });
      return true;
    }
    sendJson(res, 200, faults);
    return true;
  };
}

/** Splits this build's flags (`--fault`, `--delay-ms`) from the node's. */
export function parseFaultArgs(argv: string[]): { faults: FaultSettings; nodeArgs: string[] } {
  const { values, tokens } = parseArgs({
    args: argv,
    strict: false,
    tokens: true,
    options: { fault: { type: 'string' }, 'delay-ms': { type: 'string' } },
  });
  const fault = typeof values.fault === 'string' ? values.fault : 'none';
  if (!(FAULT_MODES as readonly string[]).includes(fault)) {
    throw new Error(`--fault must be one of ${FAULT_MODES.join(', ')}, got ${JSON.stringify(fault)}`);
  }
  const delay = values['delay-ms'];
  const delayMs = integerOption('delay-ms', typeof delay === 'string' ? delay : undefined, 0, MAX_DELAY_MS) ?? 0;
  const ours = new Set<number>();
  for (const token of tokens ?? []) {
    if (token.kind !== 'option' || (token.name !== 'fault' && token.name !== 'delay-ms')) continue;
    ours.add(token.index);
    if (!token.inlineValue && token.value !== undefined) ours.add(token.index + 1);
  }
  return { faults: { delayMs, fault: fault as FaultMode }, nodeArgs: argv.filter((_, i) => !ours.has(i)) };
}

if (require.main === module) {
  let parsed: ReturnType<typeof parseFaultArgs> | undefined;
  try {
    parsed = parseFaultArgs(process.argv.slice(2));
  } catch (err) {
    refuseStart(createLogger('storage-node', 'info'), `${(err as Error).message}\n${USAGE}`);
  }
  if (parsed) {
    const { faults, nodeArgs } = parsed;
    runStorageNode(
      nodeArgs,
      { answerApply: faultyApply(faults), extraRoute: faultsRoute(faults) },
      `${USAGE}\n  [--fault ${FAULT_MODES.join('|')}] [--delay-ms N]   (this test build only)`,
    ).catch(failedStart);
  }
}
