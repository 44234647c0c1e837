import assert from 'node:assert/strict';
import {
  cancelBodySchema,
  type CancelRequest,
  type ListQuery,
  type PrepareRequest,
  type SubmitRequest,
} from '../../api/executions/request-schemas';

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
});
