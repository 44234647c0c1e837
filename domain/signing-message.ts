import { badRequest } from './errors';

/** 400 for a field with a line break (it could forge another line of the message) or a timestamp that is no integer. */
function checkFields(fields: Record<string, unknown>, timestamp: number): void {
  for (const [name, value] of Object.entries(fields)) {
    if (typeof value !== 'string' || /[\r\n]/.test(value)) throw badRequest(`${name} must be a string without line breaks`);
  }
  if (!Number.isSafeInteger(timestamp)) throw badRequest('timestamp must be an integer (Unix seconds)');
}

/** The fields of the text a frontend signs for an execution (docs/api-executions.md "What is signed, and where it is checked"). */
export interface SigningMessageInput {
  /** The dApp domain of the wallet connection, `connectEnvelope.domain`. */
  readonly domain: string;
  readonly executionId: string;
  /** The wallet, `connectEnvelope.address` (equal to the `{wallet}` path segment). */
  readonly address: string;
  /** `intentHash(intent)`: 64 lowercase hex digits. */
  readonly intentHash: string;
  /** `connectEnvelope.timestamp`, Unix seconds. */
  readonly timestamp: number;
}

/**
 * The exact text a frontend signs (as UTF-8 bytes, ed25519) to submit an execution: four lines
 * joined by `\n`, no trailing newline. Exported for frontends, the sign CLI and tests.
 *
 * ```
 * {domain} asks you to sign execution {executionId}
 * Wallet: {address}
 * Intent: {intentHash}
 * Timestamp: {timestamp}
 * ```
 * @throws ServiceError 400 when a field holds a line break (it could forge another line) or
 *   `timestamp` is not an integer.
 */
export function buildSigningMessage(input: SigningMessageInput): string {
  const { domain, executionId, address, intentHash, timestamp } = input;
  checkFields({ domain, executionId, address, intentHash }, timestamp);
  return [
    `${domain} asks you to sign execution ${executionId}`,
    `Wallet: ${address}`,
    `Intent: ${intentHash}`,
    `Timestamp: ${timestamp}`,
  ].join('\n');
}

/** The fields of the text a wallet signs to cancel an execution. */
export interface CancelMessageInput {
  readonly domain: string;
  readonly executionId: string;
  readonly address: string;
  /** Unix seconds. */
  readonly timestamp: number;
}

/**
 * The exact text a wallet signs (UTF-8, ed25519) to cancel an execution: three lines joined by
 * `\n`, no trailing newline. It names no intent: a cancel applies to whatever the id holds.
 *
 * ```
 * {domain} asks you to cancel execution {executionId}
 * Wallet: {address}
 * Timestamp: {timestamp}
 * ```
 * @throws ServiceError 400 as buildSigningMessage does.
 */
export function buildCancelMessage(input: CancelMessageInput): string {
  const { domain, executionId, address, timestamp } = input;
  checkFields({ domain, executionId, address }, timestamp);
  return [`${domain} asks you to cancel execution ${executionId}`, `Wallet: ${address}`, `Timestamp: ${timestamp}`].join('\n');
}

/** What the refund address message names. */
export interface RefundAddressMessageInput {
  readonly domain: string;
  readonly executionId: string;
  readonly address: string;
  /** The address refunds should go to, as sent (`0x` + 40 hex digits). */
  readonly refundAddress: string;
  /** Unix seconds. */
  readonly timestamp: number;
}

/**
 * The exact text a wallet signs (UTF-8, ed25519) to set where refunds of its execution go: three
 * lines joined by `\n`, no trailing newline.
 *
 * ```
 * {domain} asks you to send refunds of execution {executionId} to {refundAddress}
 * Wallet: {address}
 * Timestamp: {timestamp}
 * ```
 * @throws ServiceError 400 as buildSigningMessage does.
 */
export function buildRefundAddressMessage(input: RefundAddressMessageInput): string {
  const { domain, executionId, address, refundAddress, timestamp } = input;
  checkFields({ domain, executionId, address, refundAddress }, timestamp);
  return [
    `${domain} asks you to send refunds of execution ${executionId} to ${refundAddress}`,
    `Wallet: ${address}`,
    `Timestamp: ${timestamp}`,
  ].join('\n');
}
