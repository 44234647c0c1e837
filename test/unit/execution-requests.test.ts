import assert from 'node:assert/strict';
import { buildOpenApiDocument } from '../../api/operations/openapi';
import {
  cancelBodySchema,
  executionIdParamSchema,
  prepareBodySchema,
  type CancelRequest,
  type ListQuery,
  type PrepareRequest,
  type SubmitRequest,
} from '../../api/executions/request-schemas';
import { validator } from '../../api/http/validate';
import { loadConfig } from '../../config/config';
import { EXECUTION_ROUTE_WORDS } from '../../contracts/ids';
import { ServiceError } from '../../domain/errors';

/** True only when A and B are the same type (checked by the compiler: a mismatch does not build). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const same = <A, B>(ok: Same<A, B>) => ok;

type Envelope = { address: string; domain: string; timestamp: number };

describe('api/executions/request-schemas: the requests as the routes validate them', () => {
  it('when the request types are derived from the schemas, then they are the requests the use-cases take', () => {
    same<
      PrepareRequest,
      {
        executionId?: string;
        intent: Record<string, unknown>;
        signerPublicKey?: string;
        ttlSeconds?: number;
        deposit?: { chain: string; asset: string; minAmount: string; refundAddress?: string };
      }
    >(true);
    same<SubmitRequest, { executionId: string; publicKey: string; signature: string; connectEnvelope: Envelope }>(true);
    same<CancelRequest, { publicKey: string; signature: string; connectEnvelope: Envelope }>(true);
    same<ListQuery, { status?: string; pageSize?: string; pageToken?: string }>(true);
    assert.deepEqual(Object.keys(cancelBodySchema.properties), ['publicKey', 'signature', 'connectEnvelope']);
  });

  it('when a prepare names its execution with a word of the execution routes, then it is 400 with a message saying the word is reserved', () => {
    const check = validator<PrepareRequest>(prepareBodySchema, 'request body');
    assert.deepEqual([...EXECUTION_ROUTE_WORDS], ['submit', 'events', 'deposit', 'cancel']);
    for (const word of EXECUTION_ROUTE_WORDS) {
      assert.throws(
        () => check({ executionId: word, intent: {} }),
        (e: unknown) =>
          e instanceof ServiceError &&
          e.status === 400 &&
          e.message ===
            `request body: executionId "${word}" is reserved: submit, events, deposit, cancel are words of the execution routes, never execution ids`,
      );
    }
    for (const id of ['.', '..', 'has space'])
      assert.throws(
        () => check({ executionId: id, intent: {} }),
        (e: unknown) => e instanceof ServiceError && e.status === 400 && /executionId must match pattern/.test(e.message),
      );
    for (const id of ['submitted', 'my-events', 'Cancel', 'ex-1']) assert.equal(check({ executionId: id, intent: {} }).executionId, id);
  });

  it('when an execution was named with a route word other than submit before they were reserved, then its routes still take the id', () => {
    const check = validator<string>(executionIdParamSchema, 'executionId path parameter', '');
    for (const id of ['events', 'deposit', 'cancel']) assert.equal(check(id), id);
    assert.throws(() => check('submit'), ServiceError);
  });

  it("when the OpenAPI document is built, then prepare's 201 links to reading, following and depositing the execution, its executionId from the answer", () => {
    const doc = buildOpenApiDocument(loadConfig({})) as any;
    const links = doc.paths['/api/v1/executions/{wallet}'].post.responses['201'].links;
    const targets = {
      getExecution: ['get', '/api/v1/executions/{wallet}/{executionId}'],
      executionEvents: ['get', '/api/v1/executions/{wallet}/{executionId}/events'],
      depositExecution: ['post', '/api/v1/executions/{wallet}/{executionId}/deposit'],
    };
    for (const [operationId, [method, path]] of Object.entries(targets)) {
      assert.equal(links[operationId].operationId, operationId);
      assert.equal(doc.paths[path][method].operationId, operationId, `${operationId} is ${method} ${path}`);
      assert.deepEqual(links[operationId].parameters, {
        wallet: '$response.body#/result/wallet',
        executionId: '$response.body#/result/executionId',
      });
    }
    const idSchema = doc.components.schemas.PrepareRequest.properties.executionId;
    for (const word of EXECUTION_ROUTE_WORDS) assert.equal(new RegExp(idSchema.pattern).test(word), false, `${word} is no new id`);
  });
});
