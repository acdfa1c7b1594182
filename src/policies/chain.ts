// Owns running an ordered chain of policies for one question: the first allow or deny decides; a
// policy that ignores (or fails: its source down, a bad answer) passes to the next; when all
// ignore, the answer is ignore and the worker's static users or ACL decide. A failure on the way
// makes the answer not cacheable (the next question asks again), and is counted per policy. A
// subscribe answer carries the overlaps met along the chain (auth/acl-scope.ts).
import type { Overlaps } from '../auth/types.ts';
import type { AclAnswer, AclQuery, AuthAnswer, AuthQuery, CompiledAclPolicy, CompiledAuthPolicy, ScramAnswer, ScramQuery } from './types.ts';

/** Per policy: how it answered. */
export interface PolicyCounters {
  allow: number;
  deny: number;
  ignore: number;
  /** Ignores caused by a failure (source down, timeout, bad answer). */
  error: number;
}

export function newCounters(): PolicyCounters {
  return { allow: 0, deny: 0, ignore: 0, error: 0 };
}

export interface ChainResult<A> {
  answer: A;
  cacheable: boolean;
}

const IGNORED: Readonly<{ result: 'ignore'; overlaps?: Overlaps }> = Object.freeze({ result: 'ignore' as const });

/** The first allow or deny of `chain` for `ask`, or ignore when every policy ignored. */
async function runChain<P extends { id: string }, A extends AuthAnswer | AclAnswer>(
  chain: readonly P[],
  ask: (policy: P) => Promise<A>,
  counters: (id: string) => PolicyCounters,
): Promise<ChainResult<A | typeof IGNORED>> {
  let cacheable = true;
  let overlaps: Overlaps | undefined;
  for (const policy of chain) {
    const answer = await ask(policy);
    const c = counters(policy.id);
    // What a subscription may read is decided along the whole chain: the overlaps of the
    // policies that ignored go with the answer (auth/acl-scope.ts).
    if ('overlaps' in answer && answer.overlaps !== undefined) overlaps = merge(overlaps, answer.overlaps);
    if (answer.result !== 'ignore') {
      c[answer.result]++;
      return { answer: overlaps === undefined ? answer : { ...answer, overlaps }, cacheable };
    }
    if (answer.error === true) {
      c.error++;
      cacheable = false;
    } else {
      c.ignore++;
    }
  }
  return { answer: overlaps === undefined ? IGNORED : { result: 'ignore' as const, overlaps }, cacheable };
}

function merge(a: Overlaps | undefined, b: Overlaps): Overlaps {
  return a === undefined ? b : { allow: a.allow || b.allow, deny: a.deny || b.deny };
}

export function runAuthChain(chain: readonly CompiledAuthPolicy[], q: AuthQuery, counters: (id: string) => PolicyCounters): Promise<ChainResult<AuthAnswer>> {
  return runChain(chain, (p) => p.authenticate(q), counters);
}

export function runAclChain(chain: readonly CompiledAclPolicy[], q: AclQuery, counters: (id: string) => PolicyCounters): Promise<ChainResult<AclAnswer>> {
  return runChain(chain, (p) => p.authorize(q), counters);
}

/** The first SCRAM credentials the authentication chain holds for a username, asked of the
 * policies that keep them (database) in chain order; the others are passed by. A failure on the
 * way is counted (error) and makes the answer not cacheable, as for a password. */
export async function runScramChain(chain: readonly CompiledAuthPolicy[], q: ScramQuery, counters: (id: string) => PolicyCounters): Promise<ChainResult<ScramAnswer>> {
  let cacheable = true;
  for (const policy of chain) {
    if (policy.scramCredentials === undefined) continue;
    const answer = await policy.scramCredentials(q);
    if (answer.result === 'allow') return { answer, cacheable };
    const c = counters(policy.id);
    if (answer.error === true) {
      c.error++;
      cacheable = false;
    } else {
      c.ignore++;
    }
  }
  return { answer: { result: 'ignore' }, cacheable };
}
