// The messages between a worker's policy half and the main thread's policy manager: the state of
// the chains (pushed on every change and to a worker that starts), the questions a worker asks
// (batched per tick), and the answers (batched per tick). Plain data only (postMessage).
import type { AclAnswer, AclQuery, AuthAnswer, AuthQuery, PolicyParam, ScramAnswer, ScramQuery } from './types.ts';

export interface PolicyState {
  /** Changes with every policy change: answers computed under another generation are stale. */
  generation: number;
  /** Enabled authentication policies exist: credentials go to the chain before the static users. */
  auth: boolean;
  /** Enabled ACL policies exist: decisions go to the chain before the static ACL. */
  acl: boolean;
  /** What the authentication answers depend on besides the password (the cache key). */
  authParams: PolicyParam[];
  /** What the ACL answers depend on besides the action and topic. */
  aclParams: PolicyParam[];
  /** The control platform's tenant counters (shared memory, not copied), or null without tenants. */
  tenants: SharedArrayBuffer | null;
}

export const NO_POLICIES: PolicyState = Object.freeze({ generation: 0, auth: false, acl: false, authParams: [], aclParams: [], tenants: null }) as PolicyState;

export type PolicyQuestion = { id: number; kind: 'auth'; q: AuthQuery } | { id: number; kind: 'acl'; q: AclQuery } | { id: number; kind: 'scram'; q: ScramQuery };

/** The chain's answer: the first policy's allow or deny, or ignore when every one ignored (the
 * worker's static users or ACL decide then). `cacheable` is false when a policy failed on the way
 * (a source down): the next question asks again. */
export interface PolicyReply {
  id: number;
  answer: AuthAnswer | AclAnswer | ScramAnswer;
  cacheable: boolean;
  generation: number;
}
