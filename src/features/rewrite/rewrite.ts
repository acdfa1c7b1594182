// Rewrite: topic rewrite's main-thread half. Owns the rules in force: the configuration's
// `rewrite` list, replaced by the list stored through the admin API (kept in the store,
// replicated to the cluster's nodes); sends them to every worker with fresh shared counters, and
// reads the counters for the metrics.
import type { FeatureContext } from '../feature.ts';
import { DomainError } from '../../errors/domain-error.ts';
import { checkRewriteRule, checkRewriteRules, MAX_REWRITE_RULES, type RewriteRule } from './rules.ts';

export const REWRITE_KIND = 'rewrite';
const RULES_ID = 'rules';

export interface RewriteStatus {
  source: 'config' | 'api';
  rules: (RewriteRule & { position: number; rewritten: number })[];
}

type Host = Pick<FeatureContext, 'config' | 'store' | 'log' | 'setWorkerState'>;

export class Rewrite {
  private rules!: RewriteRule[];
  private source: 'config' | 'api' = 'config';
  private counts = new Uint32Array(new SharedArrayBuffer(4));
  /** Counts before the last wrap of each 32-bit counter, and the last value read. */
  private wrapped: number[] = [];
  private lastRead: number[] = [];

  constructor(private readonly host: Host) {
    this.use(checkRewriteRules(host.config.rewrite), 'config');
  }

  async load(): Promise<void> {
    const stored = await this.host.store.getAdmin<RewriteRule[]>(REWRITE_KIND, RULES_ID);
    if (stored) this.use(checkRewriteRules(stored), 'api');
  }

  status(): RewriteStatus {
    const n = this.rewritten();
    return { source: this.source, rules: this.rules.map((r, i) => ({ position: i + 1, ...r, rewritten: n[i] })) };
  }

  /** Topics each rule rewrote on this node (every worker's), since it was added. */
  rewritten(): number[] {
    return this.rules.map((_, i) => {
      const v = Atomics.load(this.counts, i);
      if (v < this.lastRead[i]) this.wrapped[i] += 2 ** 32;
      this.lastRead[i] = v;
      return this.wrapped[i] + v;
    });
  }

  list(): RewriteRule[] {
    return this.rules.map((r) => ({ ...r }));
  }

  async replace(rules: unknown): Promise<RewriteStatus> {
    const next = checkRewriteRules(rules);
    await this.store(next);
    return this.status();
  }

  /** Inserts a rule at `position` (1-based; default: last). */
  async add(rule: unknown, position?: number): Promise<RewriteStatus> {
    const r = checkRewriteRule(rule);
    if (this.rules.length >= MAX_REWRITE_RULES) throw new DomainError('CONFLICT', `at most ${MAX_REWRITE_RULES} rewrite rules`, { field: 'rules' });
    const at = position === undefined ? this.rules.length : position - 1;
    if (at < 0 || at > this.rules.length) throw new DomainError('INVALID_PARAMETER', `position: 1..${this.rules.length + 1}`, { field: 'position' });
    const next = [...this.rules];
    next.splice(at, 0, r);
    await this.store(next);
    return this.status();
  }

  async remove(position: number): Promise<RewriteStatus> {
    if (!Number.isInteger(position) || position < 1 || position > this.rules.length) throw new DomainError('NOT_FOUND', `no rewrite rule at position ${position}`, { field: 'position' });
    const next = [...this.rules];
    next.splice(position - 1, 1);
    await this.store(next);
    return this.status();
  }

  /** The rules changed on another node (null: removed there, back to the configuration's). */
  applyStored(id: string, doc: unknown): void {
    if (id !== RULES_ID) return;
    if (doc === null) this.use(checkRewriteRules(this.host.config.rewrite), 'config');
    else this.use(checkRewriteRules(doc), 'api');
  }

  private async store(next: RewriteRule[]): Promise<void> {
    await this.host.store.putAdmin(REWRITE_KIND, RULES_ID, next);
    this.use(next, 'api');
    this.host.log.info('topic rewrite rules changed', { rules: next.length });
  }

  private use(rules: RewriteRule[], source: 'config' | 'api'): void {
    // A rule kept through a change (the same four fields) keeps its count.
    const before = new Map<string, number>();
    if (this.rules !== undefined) {
      const n = this.rewritten();
      this.rules.forEach((r, i) => before.set(ruleKey(r), n[i]));
    }
    this.rules = rules;
    this.source = source;
    const counts = new SharedArrayBuffer(Math.max(rules.length, 1) * 4);
    this.counts = new Uint32Array(counts);
    this.wrapped = rules.map((r) => {
      const k = ruleKey(r);
      const n = before.get(k) ?? 0;
      before.delete(k);
      return n;
    });
    this.lastRead = rules.map(() => 0);
    this.host.setWorkerState('rewrite', { rules, counts });
  }
}

function ruleKey(r: RewriteRule): string {
  return `${r.action}\u0000${r.sourceFilter}\u0000${r.regex}\u0000${r.destination}`;
}
