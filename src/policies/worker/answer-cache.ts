// Owns a worker's cache of authentication answers: bounded (least recently used out first), each
// entry kept `ttlMs`, emptied when the policies change. Keyed by the parameters the chain reads
// and a keyed digest of the password (the password itself is never kept).
import { createHmac, randomBytes } from 'node:crypto';

import { LruMap } from '../../auth/lru.ts';
import type { AuthAnswer, AuthQuery, PolicyParam } from '../types.ts';
import { paramValue } from '../params.ts';

interface Entry {
  answer: AuthAnswer;
  expiresAt: number;
}

export class AnswerCache {
  private readonly entries: LruMap<string, Entry>;
  /** Per process: a digest in the cache says nothing outside it. */
  private readonly key = randomBytes(32);

  constructor(
    capacity: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.entries = new LruMap(ttlMs > 0 ? capacity : 0);
  }

  /** false with auth.policyCacheTtl or auth.policyCacheSize 0: nothing is kept, no key is made. */
  get enabled(): boolean {
    return this.entries.capacity > 0;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The cache key of a question under the chain's parameters. */
  keyOf(q: AuthQuery, params: readonly PolicyParam[]): string {
    let key = '';
    for (const p of params) if (p !== 'password') key += `${paramValue(p, q) ?? '\u0001'}\u0000`;
    return key + (q.password === undefined ? '-' : createHmac('sha256', this.key).update(q.password).digest('base64'));
  }

  get(key: string): AuthAnswer | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (e.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.answer;
  }

  set(key: string, answer: AuthAnswer): void {
    const until = this.now() + this.ttlMs;
    const validUntil = answer.result === 'allow' ? answer.validUntil : undefined;
    this.entries.set(key, { answer, expiresAt: validUntil !== undefined && validUntil < until ? validUntil : until });
  }

  clear(): void {
    this.entries.clear();
  }
}
