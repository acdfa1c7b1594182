// PolicyManager: the main thread's half of the auth and ACL policies (spec 4.7). Keeps the policies
// (store kinds 'auth-policy' and 'acl-policy'), compiles each (its own pool when it carries a
// datasource), checks a new or changed one against its source (a dry run) before accepting it,
// orders the two chains, tells every worker the chains' state (generation, whether any policy is
// enabled, which parameters answers depend on: the workers' cache keys), and answers the workers'
// questions, batched per worker per tick. Writes are serialized; a change applies at once on every
// worker and empties their caches.
import { randomBytes } from 'node:crypto';

import type { Logger } from '../log/index.ts';
import type { Store } from '../store/types.ts';
import type { PolicyQuestion, PolicyReply, PolicyState } from './channel.ts';
import { newCounters, runAclChain, runAuthChain, runScramChain, type ChainResult, type PolicyCounters } from './chain.ts';
import { ACL_COMPILERS, AUTH_COMPILERS, type PolicyCompiler } from './compile.ts';
import { PolicyError } from './errors.ts';
import { redactPolicy } from './redact.ts';
import {
  ACL_POLICY_TYPES, AUTH_POLICY_TYPES, PolicyConfigError,
  type AclAnswer, type AclQuery, type AuthAnswer, type AuthQuery, type CompiledAclPolicy, type CompiledAuthPolicy,
  type PolicyContext, type PolicyKind, type PolicyParam, type PolicyRecord, type ScramAnswer, type ScramQuery,
} from './types.ts';

export type { PolicyKind };

export const POLICY_STORE_KIND: Record<PolicyKind, string> = { auth: 'auth-policy', acl: 'acl-policy' };

/** What the manager needs of the supervisor. */
export interface PolicyHost {
  setPolicyState(state: PolicyState): void;
  onPolicyQuestions(fn: (worker: number, questions: PolicyQuestion[]) => void): void;
  sendPolicyReplies(worker: number, replies: PolicyReply[]): void;
}

export interface PolicyInput {
  name?: unknown;
  type?: unknown;
  config?: unknown;
  enabled?: unknown;
  order?: unknown;
}

/** A policy as the API shows it: redacted, with how it answered since the start. */
export interface PolicyView extends PolicyRecord {
  /** Why it is not running (a stored policy that no longer compiles), or null. */
  error: string | null;
  stats: PolicyCounters;
}

type Compiled = CompiledAuthPolicy | CompiledAclPolicy;

interface Entry {
  record: PolicyRecord;
  compiled: Compiled | null;
  error: string | null;
  counters: PolicyCounters;
}

const MAX_NAME_LENGTH = 128;
const MAX_ORDER = 1_000_000;

export class PolicyManager {
  private readonly entries: Record<PolicyKind, Map<string, Entry>> = { auth: new Map(), acl: new Map() };
  private authChain: CompiledAuthPolicy[] = [];
  private aclChain: CompiledAclPolicy[] = [];
  private generation = 1;
  private writes: Promise<unknown> = Promise.resolve();
  private readonly replies = new Map<number, PolicyReply[]>();
  private flushing = false;
  private closed = false;
  /** The control platform's applications: a policy first in the authentication chain. */
  private tenantPolicy: CompiledAuthPolicy | null = null;
  private tenantBuffer: SharedArrayBuffer | null = null;

  constructor(
    private readonly host: PolicyHost,
    private readonly store: Store,
    private readonly ctx: PolicyContext,
    private readonly log: Logger,
    private readonly compilers: { auth: Record<string, PolicyCompiler<CompiledAuthPolicy>>; acl: Record<string, PolicyCompiler<CompiledAclPolicy>> } = { auth: AUTH_COMPILERS, acl: ACL_COMPILERS },
  ) {
    host.onPolicyQuestions((worker, questions) => this.answer(worker, questions));
  }

  /** Reads the stored policies and compiles them (without a dry run: a source that is down now
   * is the chain's business, answered as ignore); one that no longer compiles stays listed with
   * its error and out of the chain. */
  async load(): Promise<void> {
    for (const kind of ['auth', 'acl'] as const) {
      for (const { id, doc } of await this.store.listAdmin<PolicyRecord>(POLICY_STORE_KIND[kind])) {
        const entry: Entry = { record: doc, compiled: null, error: null, counters: newCounters() };
        try {
          entry.compiled = this.compiler(kind, doc.type).compile(doc, this.ctx);
        } catch (err) {
          entry.error = (err as Error).message;
          this.log.error('stored policy cannot be started', { kind, policy: id, type: doc.type, error: entry.error });
        }
        this.entries[kind].set(id, entry);
      }
    }
    this.rebuild();
  }

  /** A policy changed on another node of the cluster, stored here once applied (null:
   * deleted): compiled like at load (one that does not compile stays listed with its error), the
   * chain rebuilt, the previous compiled policy closed. */
  applyStored(kind: PolicyKind, id: string, doc: PolicyRecord | null): Promise<void> {
    return this.serialized(async () => {
      if (doc !== null && (typeof doc !== 'object' || doc.id !== id || typeof doc.type !== 'string')) throw new Error(`${kind} policy ${id} from another node is not a policy record`);
      const previous = this.entries[kind].get(id);
      if (doc === null) this.entries[kind].delete(id);
      else {
        const entry: Entry = { record: doc, compiled: null, error: null, counters: newCounters() };
        try {
          entry.compiled = this.compiler(kind, doc.type).compile(doc, this.ctx);
        } catch (err) {
          entry.error = (err as Error).message;
          this.log.error('policy from another node cannot be started', { kind, policy: id, type: doc.type, error: entry.error });
        }
        this.entries[kind].set(id, entry);
      }
      this.rebuild();
      await previous?.compiled?.close();
    });
  }

  add(kind: PolicyKind, input: PolicyInput, options: { dryRun?: boolean } = {}): Promise<PolicyRecord> {
    return this.serialized(async () => {
      const type = this.validType(kind, input.type);
      const name = this.validName(kind, input.name, undefined);
      const compiler = this.compiler(kind, type);
      const config = compiler.parse(input.config ?? {});
      const record: PolicyRecord = {
        id: `${kind}-${randomBytes(6).toString('hex')}`,
        name,
        type,
        config,
        enabled: optionalBoolean(input.enabled, 'enabled') ?? true,
        order: optionalOrder(input.order) ?? this.nextOrder(kind),
        createTime: new Date().toISOString(),
      };
      const compiled = await this.compileChecked(kind, record, options.dryRun !== false);
      try {
        await this.store.putAdmin(POLICY_STORE_KIND[kind], record.id, record);
      } catch (err) {
        await compiled.close();
        throw err;
      }
      this.entries[kind].set(record.id, { record, compiled, error: null, counters: newCounters() });
      this.rebuild();
      this.log.info('policy added', { kind, policy: record.id, name, type, enabled: record.enabled, order: record.order });
      return redactPolicy(record);
    });
  }

  /** Changes a policy's name, config, enabled or order; a new config is checked like an add's. */
  update(kind: PolicyKind, id: string, input: PolicyInput, options: { dryRun?: boolean } = {}): Promise<PolicyRecord> {
    return this.serialized(async () => {
      const entry = this.entry(kind, id);
      const old = entry.record;
      const type = input.type === undefined ? old.type : this.validType(kind, input.type);
      const record: PolicyRecord = {
        ...old,
        type,
        name: input.name === undefined ? old.name : this.validName(kind, input.name, id),
        enabled: optionalBoolean(input.enabled, 'enabled') ?? old.enabled,
        order: optionalOrder(input.order) ?? old.order,
        config: input.config === undefined && type === old.type ? old.config : this.compiler(kind, type).parse(input.config ?? {}),
      };
      const recompile = record.config !== old.config || entry.compiled === null;
      const compiled = recompile ? await this.compileChecked(kind, record, options.dryRun !== false) : entry.compiled;
      try {
        await this.store.putAdmin(POLICY_STORE_KIND[kind], id, record);
      } catch (err) {
        if (recompile) await compiled?.close();
        throw err;
      }
      const previous = entry.compiled;
      this.entries[kind].set(id, { record, compiled, error: null, counters: recompile ? newCounters() : entry.counters });
      this.rebuild();
      if (recompile) await previous?.close();
      this.log.info('policy changed', { kind, policy: id, name: record.name, enabled: record.enabled, order: record.order });
      return redactPolicy(record);
    });
  }

  delete(kind: PolicyKind, id: string): Promise<void> {
    return this.serialized(async () => {
      const entry = this.entry(kind, id);
      await this.store.deleteAdmin(POLICY_STORE_KIND[kind], id);
      this.entries[kind].delete(id);
      this.rebuild();
      await entry.compiled?.close();
      this.log.info('policy deleted', { kind, policy: id });
    });
  }

  /** The policies of a kind in chain order (redacted), optionally of one type or with `name` in their name. */
  list(kind: PolicyKind, filter: { type?: string; name?: string } = {}): PolicyView[] {
    return this.ordered(kind)
      .filter((e) => (filter.type === undefined || e.record.type === filter.type) && (filter.name === undefined || e.record.name.includes(filter.name)))
      .map(view);
  }

  info(kind: PolicyKind, id: string): PolicyView {
    return view(this.entry(kind, id));
  }

  /** The policies (`auth-...`, `acl-...` ids) that read data source `id`: it cannot be deleted. */
  usesSource(id: string): string[] {
    const users: string[] = [];
    for (const kind of ['auth', 'acl'] as const) for (const e of this.entries[kind].values()) if (e.record.config.source === id) users.push(e.record.id);
    return users;
  }

  /** The authentication chain's answer (also what /auth/test shows). */
  authenticate(q: AuthQuery): Promise<ChainResult<AuthAnswer>> {
    return runAuthChain(this.authChain, q, (id) => this.counters('auth', id));
  }

  /** The SCRAM credentials of the authentication chain for a username (a worker's SCRAM sign-in). */
  scramCredentials(q: ScramQuery): Promise<ChainResult<ScramAnswer>> {
    return runScramChain(this.authChain, q, (id) => this.counters('auth', id));
  }

  authorize(q: AclQuery): Promise<ChainResult<AclAnswer>> {
    return runAclChain(this.aclChain, q, (id) => this.counters('acl', id));
  }

  /** Every policy's counters, for the metrics. */
  allCounters(): { kind: PolicyKind; id: string; name: string; type: string; counters: PolicyCounters }[] {
    const out = [];
    for (const kind of ['auth', 'acl'] as const) for (const e of this.entries[kind].values()) out.push({ kind, id: e.record.id, name: e.record.name, type: e.record.type, counters: e.counters });
    return out;
  }

  /** Every compiled policy of `type` now (chained or disabled), for the metrics of its type. */
  compiledOfType(type: string): { kind: PolicyKind; id: string; compiled: Compiled }[] {
    const out = [];
    for (const kind of ['auth', 'acl'] as const) for (const e of this.entries[kind].values()) if (e.record.type === type && e.compiled !== null) out.push({ kind, id: e.record.id, compiled: e.compiled });
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.writes.catch(() => {});
    for (const kind of ['auth', 'acl'] as const) {
      for (const e of this.entries[kind].values()) await e.compiled?.close().catch((err: unknown) => this.log.warn('policy did not close cleanly', { policy: e.record.id, err }));
      this.entries[kind].clear();
    }
    this.authChain = [];
    this.aclChain = [];
  }

  private answer(worker: number, questions: readonly PolicyQuestion[]): void {
    for (const question of questions) {
      const asked: Promise<ChainResult<AuthAnswer | AclAnswer | ScramAnswer>> = question.kind === 'auth' ? this.authenticate(withBufferPassword(question.q)) : question.kind === 'scram' ? this.scramCredentials(question.q) : this.authorize(question.q);
      const generation = this.generation;
      asked.then(
        (r) => this.reply(worker, { id: question.id, answer: r.answer, cacheable: r.cacheable, generation }),
        (err: unknown) => {
          // A policy must not throw (its failures are ignores); if one does, no allow comes of it.
          this.log.error('policy chain failed', { kind: question.kind, err });
          this.reply(worker, { id: question.id, answer: { result: 'ignore', error: true, reason: 'internal error' }, cacheable: false, generation });
        },
      );
    }
  }

  private reply(worker: number, reply: PolicyReply): void {
    if (this.closed) return;
    const list = this.replies.get(worker);
    if (list) list.push(reply);
    else this.replies.set(worker, [reply]);
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      for (const [w, replies] of this.replies) this.host.sendPolicyReplies(w, replies);
      this.replies.clear();
    });
  }

  private async compileChecked(kind: PolicyKind, record: PolicyRecord, dryRun: boolean): Promise<Compiled> {
    const compiled = this.compiler(kind, record.type).compile(record, this.ctx);
    if (!dryRun) return compiled;
    try {
      await compiled.dryRun();
    } catch (err) {
      await compiled.close().catch(() => {});
      throw err;
    }
    return compiled;
  }

  /**
   * The control platform's applications answer first (their app keys are usernames no other
   * policy should see); `tenants` is the buffer their answers count in. Called again whenever an
   * application changes: every worker's cached answers are dropped.
   */
  setTenantPolicy(policy: CompiledAuthPolicy | null, tenants: SharedArrayBuffer | null): void {
    this.tenantPolicy = policy;
    this.tenantBuffer = tenants;
    this.rebuild();
  }

  /** The chains from the entries, and every worker told (their caches empty). */
  private rebuild(): void {
    const running = (kind: PolicyKind) => this.ordered(kind).filter((e) => e.record.enabled && e.compiled !== null).map((e) => e.compiled!);
    this.authChain = running('auth') as CompiledAuthPolicy[];
    if (this.tenantPolicy !== null) this.authChain.unshift(this.tenantPolicy);
    this.aclChain = running('acl') as CompiledAclPolicy[];
    this.generation++;
    const params = (chain: readonly Compiled[]) => [...new Set(chain.flatMap((p) => [...p.params]))].sort() as PolicyParam[];
    this.host.setPolicyState({
      generation: this.generation,
      auth: this.authChain.length > 0,
      acl: this.aclChain.length > 0,
      authParams: params(this.authChain),
      aclParams: params(this.aclChain),
      tenants: this.tenantBuffer,
    });
  }

  private ordered(kind: PolicyKind): Entry[] {
    return [...this.entries[kind].values()].sort((a, b) => a.record.order - b.record.order || a.record.createTime.localeCompare(b.record.createTime));
  }

  private counters(kind: PolicyKind, id: string): PolicyCounters {
    return this.entries[kind].get(id)?.counters ?? newCounters();
  }

  private entry(kind: PolicyKind, id: string): Entry {
    const e = this.entries[kind].get(id);
    if (!e) throw new PolicyError('NOT_FOUND', `${kind === 'auth' ? 'authentication' : 'ACL'} policy ${JSON.stringify(id)} not found`, 'id');
    return e;
  }

  private compiler(kind: PolicyKind, type: string): PolicyCompiler<Compiled> {
    const c = this.compilers[kind][type];
    if (!c) throw new PolicyConfigError('type', `must be one of ${(kind === 'auth' ? AUTH_POLICY_TYPES : ACL_POLICY_TYPES).join(', ')}`);
    return c;
  }

  private validType(kind: PolicyKind, type: unknown): string {
    const types: readonly string[] = kind === 'auth' ? AUTH_POLICY_TYPES : ACL_POLICY_TYPES;
    if (typeof type !== 'string' || !types.includes(type)) throw new PolicyConfigError('type', `must be one of ${types.join(', ')}`);
    return type;
  }

  private validName(kind: PolicyKind, name: unknown, self: string | undefined): string {
    if (typeof name !== 'string' || name.trim() === '' || name.length > MAX_NAME_LENGTH) {
      throw new PolicyConfigError('name', `must be a non-empty string of at most ${MAX_NAME_LENGTH} characters`);
    }
    for (const e of this.entries[kind].values()) {
      if (e.record.name === name && e.record.id !== self) throw new PolicyError('CONFLICT', `a policy named ${JSON.stringify(name)} exists`, 'name');
    }
    return name;
  }

  private nextOrder(kind: PolicyKind): number {
    let max = 0;
    for (const e of this.entries[kind].values()) max = Math.max(max, e.record.order);
    return Math.min(MAX_ORDER, max + 1);
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.writes.then(fn, fn);
    this.writes = run.catch(() => {});
    return run;
  }
}

function view(e: Entry): PolicyView {
  return { ...redactPolicy(e.record), error: e.error, stats: { ...e.counters } };
}

function optionalBoolean(v: unknown, field: string): boolean | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw new PolicyConfigError(field, 'must be true or false');
  return v;
}

function optionalOrder(v: unknown): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || (v as number) < 0 || (v as number) > MAX_ORDER) throw new PolicyConfigError('order', `must be an integer 0..${MAX_ORDER}`);
  return v as number;
}

/**
 * A question's password as the Buffer the policies read it as: it crossed from the worker by
 * structured clone, which makes a Buffer a plain Uint8Array (whose toString('utf8') is the bytes
 * joined by commas: a JWT in the password was never found, and the policy answered ignore).
 */
function withBufferPassword(q: AuthQuery): AuthQuery {
  const p = q.password as Uint8Array | undefined;
  if (p === undefined || Buffer.isBuffer(p)) return q;
  return { ...q, password: Buffer.from(p.buffer, p.byteOffset, p.byteLength) };
}
