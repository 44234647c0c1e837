/**
 * `npm run signer`: the signer service (docs/decisions/0100). It holds the key files
 * (DEPOSIT_SEED_FILE, REFUND_GAS_KEY_FILE) so that the worker needs none (SIGNER_URL), listens on
 * 127.0.0.1:SIGNER_PORT only, answers only a caller with the secret of SIGNER_TOKEN_FILE (made,
 * 0600, when missing), and signs only what the read model's refunds ledger says: a refund of rows
 * to their destination for at most their money, a cancel of their nonce, a gas top-up of a token
 * row's deposit address for at most its refund's fee (domain/sign-request.ts). Anything else is 403.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Ajv } from 'ajv';
import { loadConfig } from '../config/config';
import type { Logger } from 'pino';
import { createLogger, exitOnFailure } from '../config/logger';
import { secretsOf } from '../config/secrets';
import { openDatabase, type Database } from '../db/database';
import { DepositAddressStore } from '../db/deposit-addresses';
import { RefundPayments } from '../db/refund-payments';
import { readRefundRow } from '../db/refund-rows';
import type { KeyDerivation } from '../domain/deposit-key';
import { feesOf, maxCost } from '../domain/refund-fees';
import { refundRefusal, topUpRefusal, type SignRequest, type SignRowFacts, type SignSourceFacts } from '../domain/sign-request';
import { createSecretFileOnce } from '../lib/durable-fs';
import { readPrivateFile } from '../lib/secret-file';
import { LocalSigner } from '../lib/signer';

/** The most a request body may hold. */
const MAX_BODY = 64 * 1024;

const text = { type: 'string', maxLength: 200 } as const;
const integer = { type: 'string', pattern: '^[0-9]{1,78}$' } as const;
const key = {
  type: 'object',
  additionalProperties: false,
  required: ['chain', 'workflowId', 'derivation'],
  properties: { chain: text, workflowId: text, derivation: { type: 'string', enum: ['hmac-v0', 'bip32-v1'] } },
} as const;
const tx = {
  type: 'object',
  additionalProperties: false,
  required: ['chainId', 'nonce', 'to', 'value', 'gas'],
  properties: {
    chainId: { type: 'integer', minimum: 1 },
    nonce: { type: 'integer', minimum: 0 },
    to: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' },
    value: integer,
    gas: integer,
    data: { type: 'string', pattern: '^0x([0-9a-fA-F]{2}){0,1024}$' },
    maxFeePerGas: integer,
    maxPriorityFeePerGas: integer,
    gasPrice: integer,
  },
} as const;
const ajv = new Ajv({ strict: true, allErrors: false });
const validAddressAsk = ajv.compile({ type: 'object', additionalProperties: false, required: ['key'], properties: { key } });
const validGasAsk = ajv.compile({ type: 'object', additionalProperties: false, properties: {} });
const validSign = ajv.compile({
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'key', 'rows', 'tx'],
      properties: {
        kind: { type: 'string', enum: ['refund', 'cancel'] },
        key,
        rows: { type: 'array', minItems: 1, maxItems: 16, items: text },
        tx,
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'chain', 'refund', 'tx'],
      properties: { kind: { type: 'string', const: 'top-up' }, chain: text, refund: text, tx },
    },
  ],
});

/** An answer: status and JSON body. */
type Answer = { status: number; body: Record<string, unknown> };

/** The ledger's facts of row `id`, as the signer's policy reads them. */
async function rowFacts(database: Database, id: string): Promise<SignRowFacts | undefined> {
  const row = await readRefundRow(database, id);
  if (!row) return undefined;
  const newest = row.refundVariants?.[row.refundVariants.length - 1];
  return {
    ...row,
    ...(newest ? { newestMostCost: maxCost(BigInt(newest.gas), feesOf(newest)) } : {}),
  };
}

/** The deposit address of `workflowId` on `chain`, as the ledger knows it: the facts the policy reads, and its derivation. */
async function sourceFacts(
  database: Database,
  chain: string,
  workflowId: string,
): Promise<(SignSourceFacts & { derivation: KeyDerivation }) | undefined> {
  const registered = await new DepositAddressStore(database).addressOf(chain, workflowId);
  if (!registered) return undefined;
  return new RefundPayments(database).source(chain, registered.address);
}

async function answer(route: string, body: unknown, signer: LocalSigner, database: Database): Promise<Answer> {
  if (route === '/v1/deposit-address') {
    if (!validAddressAsk(body)) return { status: 400, body: { error: ajv.errorsText(validAddressAsk.errors) } };
    const ask = body as { key: SignRequest extends { key: infer K } ? K : never };
    return { status: 200, body: { address: await signer.depositAddress(ask.key) } };
  }
  if (route === '/v1/gas-account') {
    if (!validGasAsk(body)) return { status: 400, body: { error: ajv.errorsText(validGasAsk.errors) } };
    const address = await signer.gasAccount();
    return { status: 200, body: address === undefined ? {} : { address } };
  }
  if (route !== '/v1/sign') return { status: 404, body: { error: 'no such route' } };
  if (!validSign(body)) return { status: 400, body: { error: ajv.errorsText(validSign.errors) } };
  const request = body as SignRequest;
  let refusal: string | undefined;
  if (request.kind === 'top-up') {
    const row = await rowFacts(database, request.refund);
    const source = row?.chain === undefined ? undefined : await sourceFacts(database, row.chain, row.workflowId);
    refusal = topUpRefusal(request, source, row);
  } else {
    const source = await sourceFacts(database, request.key.chain, request.key.workflowId);
    const rows = (await Promise.all(request.rows.map((id) => rowFacts(database, id)))).filter((r) => r !== undefined);
    refusal = !source
      ? 'no deposit address of that execution'
      : source.derivation !== request.key.derivation
        ? 'not the derivation the address was registered with'
        : refundRefusal(request, source, rows);
  }
  if (refusal !== undefined) return { status: 403, body: { error: `refused: ${refusal}` } };
  return { status: 200, body: { signed: await signer.sign(request) } };
}

/** The process's logger, once main has read the config that sets its level. */
let processLogger: Logger | undefined;

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('signer', config.logLevel, undefined, secretsOf(config));
  processLogger = logger;
  if (createSecretFileOnce(config.signer.tokenFile, () => `${randomBytes(32).toString('hex')}\n`))
    logger.info({ file: config.signer.tokenFile }, 'created the signer token file (0600): give it to the workers (SIGNER_TOKEN_FILE)');
  const token = Buffer.from(readPrivateFile(config.signer.tokenFile, 'signer token file').trim());
  const signer = new LocalSigner({
    seedFile: config.depositSeedFile,
    ...(config.refunds.gasKeyFile === undefined ? {} : { gasKeyFile: config.refunds.gasKeyFile }),
  });
  const database = await openDatabase(config.database);
  const authorised = (header: string | undefined) => {
    const given = Buffer.from(header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : '');
    return given.length === token.length && timingSafeEqual(given, token);
  };
  const server = http.createServer((req, res) => {
    const reply = ({ status, body }: Answer) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST') return reply({ status: 405, body: { error: 'POST only' } });
    if (!authorised(req.headers.authorization))
      return reply({ status: 401, body: { error: 'not the worker: a bearer token of SIGNER_TOKEN_FILE' } });
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        reply({ status: 413, body: { error: `more than ${MAX_BODY} bytes` } });
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > MAX_BODY) return;
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return reply({ status: 400, body: { error: 'not JSON' } });
      }
      const route = new URL(req.url ?? '/', 'http://signer').pathname;
      answer(route, body, signer, database).then(
        (a) => {
          if (a.status === 403) logger.warn({ route, refusal: a.body.error }, 'signature refused');
          else if (route === '/v1/sign') logger.info({ kind: (body as SignRequest).kind }, 'signed');
          reply(a);
        },
        (err: Error) => {
          logger.error({ route, err: err.message }, 'signer failed');
          reply({ status: 503, body: { error: 'the signer could not answer; try again' } });
        },
      );
    });
  });
  server.listen(config.signer.port, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    logger.info({ url: `http://127.0.0.1:${port}` }, 'signer listening');
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.on(signal, () => {
      server.close();
      void database.close().finally(() => process.exit(0));
    });
}

main().catch((err) => exitOnFailure('signer', 'signer failed to start', processLogger, err));
