/**
 * The patterns of the ids and keys that cross the service's edges: the API validates with them, the
 * read model's page tokens embed them, the OpenAPI document shows them.
 */

export const WALLET_PATTERN = '^[A-Za-z0-9._-]{1,128}$';
/**
 * A wallet in a route: a WALLET_PATTERN except `lookup`, the word that stands where a wallet stands
 * in `POST /api/v1/executions/lookup` (never a base58 key: base58 has no `l`).
 */
export const WALLET_PARAM_PATTERN = '^(?!lookup$)[A-Za-z0-9._-]{1,128}$';
/**
 * An execution id: 1 to 128 of `A-Za-z0-9._-`, except the words that stand where an id stands in a
 * route (`submit`: `/api/v1/executions/{wallet}/submit`) and the dot segments `.` and `..`, which
 * clients and proxies collapse out of a path.
 */
export const EXECUTION_ID_PATTERN = '^(?!(submit|\\.|\\.\\.)$)[A-Za-z0-9._-]{1,128}$';

/**
 * The fixed words of the execution routes, where an id could stand: `/api/v1/executions/{wallet}/submit`
 * and `/api/v1/executions/{wallet}/{executionId}/deposit`, `/cancel`, `/events`. A new execution
 * is never named so, so a path under `/api/v1/executions/{wallet}/` reads one way only.
 */
export const EXECUTION_ROUTE_WORDS = ['submit', 'events', 'deposit', 'cancel'] as const;

/**
 * The id a prepare may give a new execution: as EXECUTION_ID_PATTERN, and no route word. Ids taken
 * before these words were reserved stay readable: the routes and page tokens take EXECUTION_ID_PATTERN.
 */
export const NEW_EXECUTION_ID_PATTERN = `^(?!(${EXECUTION_ROUTE_WORDS.join('|')}|\\.|\\.\\.)$)[A-Za-z0-9._-]{1,128}$`;

/**
 * An ed25519 key: `0x` + 64 hex digits (any case) or base58 (Bitcoin alphabet, 32 to 44 characters).
 * What a pattern cannot say is in the description, and answered 400 with its own message.
 */
export const PUBLIC_KEY_PATTERN = '^(0x[0-9a-fA-F]{64}|[1-9A-HJ-NP-Za-km-z]{32,44})$';
/** An ed25519 signature: `0x` + 128 hex digits or base58 (64 to 88 characters). */
export const SIGNATURE_PATTERN = '^(0x[0-9a-fA-F]{128}|[1-9A-HJ-NP-Za-km-z]{64,88})$';
/** An EOA: `0x` + 40 hex digits; a mixed-case one must also pass its EIP-55 checksum. */
export const EOA_PATTERN = '^0x[0-9a-fA-F]{40}$';

/** RFC 3339 with a zone (Z or an offset). */
export const TIME_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$';
