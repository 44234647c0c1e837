import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { badRequest } from '../../domain/errors';
import { BASE_UNITS_PATTERN } from '../../domain/wei';
import { TX_HASH_PATTERN } from '../../domain/deposit-proof';
import { EXECUTION_ROUTE_WORDS, NEW_EXECUTION_ID_PATTERN } from '../../contracts/ids';

const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: false });

/**
 * A compiled validator that throws a 400 naming the first offending field. `root` names the value
 * itself in messages ('body'); '' for a value that `what` already names (a path parameter).
 */
export function validator<T>(schema: object, what: string, root = 'body'): (value: unknown) => T {
  const validate: ValidateFunction = ajv.compile({ ...schema, $id: undefined });
  return (value: unknown): T => {
    if (!validate(value)) throw badRequest(`${what}${root ? ':' : ''} ${describe(validate.errors?.[0], root, value)}`);
    return value as T;
  };
}

function describe(error: ErrorObject | undefined, root: string, value: unknown): string {
  if (!error) return 'invalid';
  const where = error.instancePath ? error.instancePath.slice(1).replace(/\//g, '.') : root;
  const at = where ? `${where} ` : '';
  const offending = valueAt(value, error.instancePath);
  if (error.keyword === 'pattern' && error.params.pattern === NEW_EXECUTION_ID_PATTERN && isRouteWord(offending))
    return `${at}${JSON.stringify(offending)} is reserved: ${EXECUTION_ROUTE_WORDS.join(', ')} are words of the execution routes, never execution ids`;
  if (error.keyword === 'additionalProperties') return `${at}has an unknown field ${JSON.stringify(error.params.additionalProperty)}`;
  if (error.keyword === 'required') return `${at}is missing ${JSON.stringify(error.params.missingProperty)}`;
  if (error.keyword === 'pattern' && error.params.pattern === TX_HASH_PATTERN)
    return `${at}must be a transaction hash: 0x and 64 hex digits`;
  if (error.keyword === 'pattern' && error.params.pattern === BASE_UNITS_PATTERN)
    return `${at}must be base units: a decimal integer (0, or digits without a leading zero; no sign, fraction or exponent), at most 2^256 − 1`;
  return `${at}${error.message}`;
}

const isRouteWord = (v: unknown) => (EXECUTION_ROUTE_WORDS as readonly unknown[]).includes(v);

/** The part of `value` at an ajv instancePath (`/deposit/chain`); undefined when there is none. */
function valueAt(value: unknown, instancePath: string): unknown {
  let at = value;
  for (const key of instancePath.split('/').slice(1)) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<string, unknown>)[key.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return at;
}

/** Depth of a parsed JSON value, without recursion (so a hostile body cannot overflow the stack). */
export function jsonDepth(value: unknown, limit: number): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) max = depth;
    if (max > limit) return max;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return max;
}
