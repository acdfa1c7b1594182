// Owns a worker's line to the policy chains of the main thread: the chains' state (pushed by the
// main thread), the questions (one post per tick however many CONNECTs and PUBLISHes ask), the
// answers, and the limits: a question not answered within `timeoutMs`, or asked while
// `maxPending` are waiting, is answered null (the caller refuses as "unavailable"; never allows).
import { NO_POLICIES, type PolicyQuestion, type PolicyReply, type PolicyState } from '../channel.ts';
import type { AclQuery, AuthQuery, ScramQuery } from '../types.ts';

/** Counters of a worker's policy questions (WorkerStats.policies). */
export interface PolicyCounters {
  authCacheHits: number;
  authCacheMisses: number;
  aclCacheHits: number;
  aclCacheMisses: number;
  /** Questions not answered in time. */
  timeouts: number;
  /** Questions refused because maxPending were waiting. */
  overloaded: number;
}

export interface WorkerPoliciesOptions {
  /** Sends one batch of questions to the main thread. */
  post(questions: PolicyQuestion[]): void;
  timeoutMs: number;
  maxPending: number;
  counters: PolicyCounters;
}

interface Waiting {
  resolve(reply: PolicyReply | null): void;
  deadline: number;
}

const SWEEP_MS = 250;

export class WorkerPolicies {
  private current: PolicyState = NO_POLICIES;
  private seq = 0;
  private readonly waiting = new Map<number, Waiting>();
  private queue: PolicyQuestion[] = [];
  private flushing = false;
  private sweeper: NodeJS.Timeout | null = null;
  private readonly changed: (() => void)[] = [];

  constructor(private readonly options: WorkerPoliciesOptions) {}

  get state(): PolicyState {
    return this.current;
  }

  get counters(): PolicyCounters {
    return this.options.counters;
  }

  /** The main thread's new state; what was cached under the old one is dropped by the listeners. */
  setState(state: PolicyState): void {
    this.current = state;
    for (const fn of this.changed) fn();
  }

  onChange(fn: () => void): void {
    this.changed.push(fn);
  }

  ask(kind: 'auth', q: AuthQuery): Promise<PolicyReply | null>;
  ask(kind: 'acl', q: AclQuery): Promise<PolicyReply | null>;
  ask(kind: 'scram', q: ScramQuery): Promise<PolicyReply | null>;
  ask(kind: 'auth' | 'acl' | 'scram', q: AuthQuery | AclQuery | ScramQuery): Promise<PolicyReply | null> {
    if (this.waiting.size >= this.options.maxPending) {
      this.options.counters.overloaded++;
      return Promise.resolve(null);
    }
    const id = ++this.seq;
    this.queue.push({ id, kind, q } as PolicyQuestion);
    if (!this.flushing) {
      this.flushing = true;
      setImmediate(() => this.flush());
    }
    this.sweeper ??= setInterval(() => this.sweep(), SWEEP_MS);
    return new Promise((resolve) => this.waiting.set(id, { resolve, deadline: Date.now() + this.options.timeoutMs }));
  }

  /** Answers from the main thread (a reply whose question timed out is ignored). */
  answer(replies: readonly PolicyReply[]): void {
    for (const r of replies) {
      const w = this.waiting.get(r.id);
      if (w === undefined) continue;
      this.waiting.delete(r.id);
      w.resolve(r);
    }
    this.stopSweeperIfIdle();
  }

  /** Every question still waiting is answered null (the worker is stopping). */
  close(): void {
    for (const w of this.waiting.values()) w.resolve(null);
    this.waiting.clear();
    this.stopSweeperIfIdle();
  }

  private flush(): void {
    this.flushing = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length > 0) this.options.post(batch);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [id, w] of this.waiting) {
      if (w.deadline > now) continue;
      this.waiting.delete(id);
      this.options.counters.timeouts++;
      w.resolve(null);
    }
    this.stopSweeperIfIdle();
  }

  private stopSweeperIfIdle(): void {
    if (this.waiting.size > 0 || this.sweeper === null) return;
    clearInterval(this.sweeper);
    this.sweeper = null;
  }
}
