/**
 * The operability routes' contract: their answers and OpenAPI operations.
 */
import { answer, param, ref, type Json } from '../http/openapi-parts';

export const healthSchema = { type: 'object', required: ['ok'], properties: { ok: { const: true } } } as const;

export const readinessSchema = {
  type: 'object',
  required: ['ready', 'checks', 'down'],
  properties: {
    ready: { type: 'boolean', description: 'this process can serve: Temporal answers and it is not shutting down' },
    checks: {
      type: 'object',
      required: ['temporal', 'process'],
      properties: { temporal: { type: 'string', enum: ['up', 'down'] }, process: { type: 'string', enum: ['serving', 'shutting-down'] } },
    },
    down: {
      type: 'array',
      items: { type: 'string', enum: ['temporal', 'process'] },
      description: 'the names of `checks` that make this process unready',
    },
  },
} as const;

/** Operability routes of the public port: probes and this document (metrics are on the operator port). */
export function operationsPaths(): Json {
  const plain = (operationId: string, summary: string, responses: Json) => ({
    get: { operationId, summary, tags: ['operations'], security: [], parameters: [param('requestId')], responses },
  });
  return {
    '/healthz': plain('health', 'Liveness: the process is up', { 200: answer('up', ref('Health')) }),
    '/readyz': plain(
      'readiness',
      "Readiness of this process: Temporal answers (one 2 s probe shared by every caller for a second) and the process is not shutting down. Storage nodes do not gate it, so one node down never takes the API out of a load balancer. Metrics and the storage nodes' health are on the operator port (OPERATOR_PORT), not here",
      {
        200: answer('this process can serve', ref('Readiness')),
        503: answer('Temporal unreachable or the process shutting down; `down` names which', ref('Readiness')),
      },
    ),
    '/openapi.json': plain('openapi', 'This document', { 200: answer('the OpenAPI 3.1 document', { type: 'object' }) }),
  };
}
