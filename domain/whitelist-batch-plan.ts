import type { WhitelistChange } from './whitelist-messages';

/** One storage node's answer for one change (the wire's ChangeResult). */
export interface NodeResult extends WhitelistChange {
  /** True when the op changed the set: an add of an absent entry, a remove of a present one. */
  readonly changed: boolean;
  /** True when a newer change had already decided the entry: acknowledged, not applied. */
  readonly superseded: boolean;
}
