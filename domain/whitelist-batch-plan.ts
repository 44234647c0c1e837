import type { ChangeResult } from '../storage-node/protocol';

/** One storage node's answer for one change (the wire's ChangeResult). */
export type NodeResult = Readonly<ChangeResult>;
