import { toChecksumAddress } from './eoa';

// The whitelists' vocabulary; the storage node's wire contract (contracts/storage-node-protocol.ts)
// and the API's schemas take their enums from here.
export const WHITELIST_KINDS = ['developer', 'user'] as const;
export type WhitelistKind = (typeof WHITELIST_KINDS)[number];
export const isWhitelistKind = (value: unknown): value is WhitelistKind => (WHITELIST_KINDS as readonly unknown[]).includes(value);

export const OP_TYPES = ['add_entry', 'remove_entry'] as const;
export type OpType = (typeof OP_TYPES)[number];

/** One element of a whitelist request (spec 2.4); `entry` is an EOA address. */
export interface WhitelistChange {
  readonly op_type: OpType;
  readonly kind: WhitelistKind;
  readonly entry: string;
}

/** One storage node's answer for one change (the wire's apply answer carries one per change). */
export interface ChangeResult extends WhitelistChange {
  /** True when the op changed the set: an add of an absent entry, a remove of a present one. */
  readonly changed: boolean;
  /** True when a newer change had already decided the entry: this one is acknowledged, not applied. */
  readonly superseded: boolean;
}

const VERB: Readonly<Record<OpType, 'add' | 'remove'>> = { add_entry: 'add', remove_entry: 'remove' };

/**
 * The confirmation of one applied change, the entry in EIP-55 form:
 * `"<entry> added to <kind> whitelist"` or `"<entry> removed from <kind> whitelist"`.
 * @throws ServiceError 400 when `entry` is not `0x` + 40 hex digits.
 */
export function confirmationMessage(change: WhitelistChange): string {
  return confirmationOfChecksummed({ ...change, entry: toChecksumAddress(change.entry) });
}

/**
 * confirmationMessage for a change whose entry is already in EIP-55 form (what the API hands the
 * batch workflow): the same text without hashing the address again.
 */
export function confirmationOfChecksummed(change: WhitelistChange): string {
  return change.op_type === 'add_entry'
    ? `${change.entry} added to ${change.kind} whitelist`
    : `${change.entry} removed from ${change.kind} whitelist`;
}

/**
 * The scopes any one of which authorises `change`, broadest first:
 * `whitelist:*`, `whitelist:{kind}:*`, `whitelist:{kind}:{add|remove}`.
 */
export function requiredScopes(change: Pick<WhitelistChange, 'op_type' | 'kind'>): string[] {
  return ['whitelist:*', `whitelist:${change.kind}:*`, `whitelist:${change.kind}:${VERB[change.op_type]}`];
}

/** True when `scopes` (a token's) holds one of the scopes that authorise `change`. */
export function hasScopeFor(scopes: readonly string[], change: Pick<WhitelistChange, 'op_type' | 'kind'>): boolean {
  return requiredScopes(change).some((scope) => scopes.includes(scope));
}

/** The scopes any one of which lets a token read the `kind` whitelist (entries, membership, batches). */
export function readScopes(kind: WhitelistKind): string[] {
  return ['whitelist:*', `whitelist:${kind}:*`, 'whitelist:read'];
}

/** True when `scopes` may read the `kind` whitelist. */
export function canRead(scopes: readonly string[], kind: WhitelistKind): boolean {
  return readScopes(kind).some((scope) => scopes.includes(scope));
}

/** The scopes any one of which lets a token read the audit trail. */
export const AUDIT_SCOPES: readonly string[] = ['whitelist:*', 'whitelist:audit'];

/** True when `scopes` may read the audit trail. */
export function canAudit(scopes: readonly string[]): boolean {
  return AUDIT_SCOPES.some((scope) => scopes.includes(scope));
}

/**
 * The rendezvous-hashing key of a change's entry, `{kind}:{EIP-55 entry}`, so that every
 * spelling of one address lands on the same storage node.
 * @throws ServiceError 400 when `entry` is not `0x` + 40 hex digits.
 */
export function ownerKey(change: Pick<WhitelistChange, 'kind' | 'entry'>): string {
  return ownerKeyOfChecksummed({ kind: change.kind, entry: toChecksumAddress(change.entry) });
}

/** ownerKey for an entry already in EIP-55 form (the API's parsed changes): no second keccak. */
export function ownerKeyOfChecksummed(change: Pick<WhitelistChange, 'kind' | 'entry'>): string {
  return `${change.kind}:${change.entry}`;
}
