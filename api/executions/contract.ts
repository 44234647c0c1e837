/**
 * The execution routes' contract, written once in three parts: what they accept
 * (request-schemas.ts: the schemas the routes validate with, and the request types derived from
 * them), what they answer (answer-schemas.ts) and what the OpenAPI document says of each path
 * (openapi-paths.ts). api/operations/openapi.ts assembles the document from them.
 */
export * from './request-schemas';
export * from './answer-schemas';
export * from './openapi-paths';
