import type { OpType, WhitelistChange as WireChange, WhitelistKind } from '../storage-node/protocol';
import { toChecksumAddress } from './eoa';

// The types come from the storage node's wire contract (one definition); `import type` is erased,
// so this module stays workflow-safe.
export type { OpType, WhitelistKind };

/** One element of a whitelist request (spec 2.4); `entry` is an EOA address. */
export type WhitelistChange = Readonly<WireChange>;

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
