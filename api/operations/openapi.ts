import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot, type ApiConfig } from '../../config/config';
import * as executions from '../executions/contract';
import * as whitelists from '../whitelists/contract';
import * as refunds from '../refunds/contract';
import * as deposits from '../deposits/contract';
import { healthSchema, operationsPaths, readinessSchema } from './contract';
import { statusPaths } from '../status/contract';
import { component, ref, requestIdParameter, type Json } from '../http/openapi-parts';

function packageVersion(): string {
  return JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')).version;
}

/**
 * The OpenAPI 3.1 document of the API. Request bodies and path parameters are the very schemas the
 * routes validate with (each feature's contract.ts); the batch limit comes from `config`, as in the route.
 */
export function buildOpenApiDocument(config: ApiConfig): Json {
  return {
    openapi: '3.1.0',
    info: {
      title: 'intent-service',
      version: packageVersion(),
      description:
        'Execution submission and whitelist management on Temporal. Execution and refunds errors are `{ error, code }`; whitelist errors are `{ error, errorMessage }`.',
    },
    tags: [
      { name: 'executions' },
      { name: 'refunds' },
      { name: 'deposits' },
      { name: 'status pages' },
      { name: 'whitelists' },
      { name: 'operations' },
    ],
    paths: {
      ...executions.executionPaths(),
      ...refunds.refundPaths(),
      ...deposits.depositPaths(),
      ...statusPaths(),
      '/chain/whitelists/': { post: whitelists.whitelistOperation('applyWhitelistBatch') },
      '/chain/whitelists': { post: whitelists.whitelistOperation('applyWhitelistBatchNoSlash') },
      ...whitelists.whitelistReadPaths(),
      ...operationsPaths(),
    },
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'a token from `npm run token -- create`; its scopes decide what it may do',
        },
      },
      parameters: {
        ...executions.executionParameters,
        requestId: requestIdParameter,
        ...whitelists.whitelistParameters(config.request),
      },
      schemas: {
        PrepareRequest: component(executions.prepareBodySchema),
        SubmitRequest: executions.withAllowedDomains(executions.submitBodySchema, config.allowedDomains),
        DepositRequest: component(executions.depositBodySchema),
        RefundedRequest: component(refunds.refundedBodySchema),
        WaivedRequest: component(refunds.waivedBodySchema),
        ApproveRequest: component(refunds.approveBodySchema),
        ...refunds.refundSchemas,
        ...deposits.depositSchemas,
        CancelRequest: executions.withAllowedDomains(executions.cancelBodySchema, config.allowedDomains),
        RefundAddressRequest: executions.withAllowedDomains(executions.refundAddressBodySchema, config.allowedDomains),
        OwnerRefundAddress: executions.ownerRefundAddressSchema,
        OwnerRefundAnswer: executions.ownerRefundAnswerSchema,
        WhitelistChange: component(whitelists.whitelistChangeSchema),
        WhitelistRequest: { ...component(whitelists.whitelistBodySchema(config.request.maxBatchLen)), items: ref('WhitelistChange') },
        ExecutionRecord: executions.executionRecordSchema,
        ExecutionRefund: executions.executionRefundSchema,
        ExecutionRecordAnswer: executions.recordAnswerSchema,
        SubmitAnswer: executions.submitAnswerSchema,
        LookupRequest: component(executions.lookupBodySchema),
        LookupAnswer: executions.lookupAnswerSchema,
        ExecutionList: executions.listAnswerSchema,
        Error: executions.errorSchema,
        WhitelistError: whitelists.whitelistErrorSchema,
        WhitelistConfirmations: whitelists.confirmationsSchema,
        WhitelistTimeout: whitelists.whitelistTimeoutSchema,
        Health: healthSchema,
        Readiness: readinessSchema,
        WhitelistEntriesAnswer: whitelists.whitelistEntriesAnswerSchema,
        WhitelistMembershipAnswer: whitelists.whitelistMembershipAnswerSchema,
        WhitelistBatchStatusAnswer: whitelists.whitelistBatchStatusAnswerSchema,
        WhitelistAuditAnswer: whitelists.whitelistAuditAnswerSchema,
      },
    },
  };
}
