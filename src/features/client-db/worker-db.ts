// Owns a worker's copy of the built-in client database (worker thread): its clients, its roles
// compiled once, its settings, and the ACL they give each connection (LocalAcl, asked by
// PolicyAuthorizer before the policy chain). The main thread (manager.ts) sends changes with the
// clientDb.apply operation (src/worker/ops/client-db.ts): a change of one client sends that client,
// never the whole database. Every change bumps `generation`, which drops the decisions each
// connection cached, so the next PUBLISH or SUBSCRIBE reads the rules as they are now.
import { randomBytes } from 'node:crypto';

import { aclPatternProblem, compileAclPattern, expandAclPattern, type AclPattern } from '../../auth/acl-pattern.ts';
import { coverLevels, matchLevels, parseFilter, type FilterLevel } from '../../auth/topic-filter.ts';
import { scopeOfRules, type ScopeWalk } from '../../auth/acl-scope.ts';
import type { Action, ClientIdentity, ReadScope } from '../../auth/types.ts';
import { parseScramCredentials, type ScramCredentials, type ScramMechanism } from '../../auth/scram/credentials.ts';
import type { RateLimit } from '../../broker/rate-limit.ts';
import { pskKeyBytes } from '../../auth/index.ts';
import { DEFAULT_SETTINGS, type ClientDbDelta, type RoleRule, type SettingsDoc, type WorkerClient, type WorkerRole } from './types.ts';

interface CompiledRule {
  allow: boolean;
  publish: boolean;
  /** A read rule: subscription scope and delivered messages. */
  read: boolean;
  /** A subscribe-filter rule: the SUBSCRIBE filter only. */
  gate: boolean;
  literal: boolean;
  pattern: AclPattern;
}

/** The rules of a client (or of anonymous clients): its roles' rules in order. */
interface Resolved {
  rules: CompiledRule[];
  hasGate: boolean;
}

/** A client as this worker holds it, with the digest of the password verified last
 * (authenticator.ts), its SCRAM credentials, read from their text when first asked, and its
 * PSK key's bytes. */
export interface HeldClient extends WorkerClient {
  verified: Buffer | null;
  scramKeys: ScramCredentials[] | null;
  psk: Buffer | null;
}

/** Counted here, summed over the workers by the main thread (metrics.ts). */
export interface ClientDbCounters {
  authSuccess: number;
  authBadCredentials: number;
  authDisabled: number;
  authClientIdMismatch: number;
  authCacheHits: number;
}

/** Generations wrap below 2^20 (PolicyAuthorizer packs three into one number). */
const GENERATION_MASK = 0xfffff;

export class WorkerClientDb {
  readonly clients = new Map<string, HeldClient>();
  private readonly roles = new Map<string, CompiledRule[]>();
  /** The roles that carry a rate limit. */
  private readonly roleLimits = new Map<string, RateLimit>();
  private settings: SettingsDoc = DEFAULT_SETTINGS;
  private resolved = new Map<string, Resolved>();
  private anonymous: Resolved | null = null;
  generation = 0;
  /** What SCRAM derives the salts shown for unknown usernames from: the stored key once the main
   * thread sent it (the same on every worker and across restarts). */
  scramMockKey: Buffer = randomBytes(32);
  readonly counters: ClientDbCounters = { authSuccess: 0, authBadCredentials: 0, authDisabled: 0, authClientIdMismatch: 0, authCacheHits: 0 };

  /** Applies a change from the main thread. */
  apply(delta: ClientDbDelta): void {
    if (delta.full === true) {
      this.clients.clear();
      this.roles.clear();
      this.roleLimits.clear();
      this.settings = DEFAULT_SETTINGS;
    }
    for (const name of delta.removeRoles ?? []) {
      this.roles.delete(name);
      this.roleLimits.delete(name);
    }
    for (const role of delta.roles ?? []) {
      this.roles.set(role.name, compileRules(role));
      if (role.rateLimit !== undefined) this.roleLimits.set(role.name, role.rateLimit);
      else this.roleLimits.delete(role.name);
    }
    for (const username of delta.removeClients ?? []) this.clients.delete(username);
    for (const c of delta.clients ?? []) this.clients.set(c.username, { ...c, verified: null, scramKeys: null, psk: c.pskKey !== undefined ? pskKeyBytes(c.pskKey) : null });
    if (delta.settings !== undefined) this.settings = delta.settings;
    if (delta.scramMockKey !== undefined) this.scramMockKey = Buffer.from(delta.scramMockKey, 'base64');
    this.resolved = new Map();
    this.anonymous = null;
    this.generation = (this.generation + 1) & GENERATION_MASK;
  }

  /** A client's inbound rate limit: its own, else that of its first role (by priority) with one;
   * undefined: its endpoint's. */
  rateLimitOf(client: WorkerClient): RateLimit | undefined {
    if (client.rateLimit !== undefined) return client.rateLimit;
    if (this.roleLimits.size === 0) return undefined;
    for (const name of client.roles) {
      const l = this.roleLimits.get(name);
      if (l !== undefined) return l;
    }
    return undefined;
  }

  /** The client's SCRAM credentials of `mechanism`, or undefined when it has none. */
  scramOf(client: HeldClient, mechanism: ScramMechanism): ScramCredentials | undefined {
    if (client.scram === undefined) return undefined;
    // Checked by the manager; never trusted: one that does not parse is left out.
    client.scramKeys ??= client.scram.map(parseScramCredentials).filter((c): c is ScramCredentials => typeof c !== 'string');
    return client.scramKeys.find((c) => c.mechanism === mechanism);
  }

  /** The gates before a client's credential counts, whatever the credential (a password, SCRAM,
   * a PSK key): enabled, and its client id binding. A refusal is counted. */
  admits(client: HeldClient, clientId: string): boolean {
    if (!client.enabled) {
      this.counters.authDisabled++;
      return false;
    }
    if (client.clientId !== undefined && client.clientId !== clientId) {
      this.counters.authClientIdMismatch++;
      return false;
    }
    return true;
  }

  /** The TLS-PSK key of an enabled client named `identity` (listener/tls-psk.ts asks it during
   * a handshake); undefined: none. */
  pskKey(identity: string): Buffer | undefined {
    const c = this.clients.get(identity);
    return c !== undefined && c.enabled && c.psk !== null ? c.psk : undefined;
  }

  get size(): number {
    return this.clients.size;
  }

  /** Whether the database answers for `who`: a client of its own, or an anonymous client when
   * the settings give anonymous clients roles. */
  governs(who: ClientIdentity): boolean {
    if (who.username === undefined) return this.settings.anonymousRoles !== null;
    return this.clients.size > 0 && this.clients.has(who.username);
  }

  decide(who: ClientIdentity, action: Action, topic: string): boolean | undefined {
    const r = this.rulesOf(who);
    if (r === undefined) return undefined;
    const defaults = this.settings.defaultAccess;
    if (action === 'publish') {
      const requested = topic.split('/');
      for (const rule of r.rules) {
        if (!rule.publish) continue;
        const levels = expandAclPattern(rule.pattern, who.clientId, who.username);
        if (levels !== undefined && matchLevels(levels, requested)) return rule.allow;
      }
      return defaults.publish === undefined ? undefined : defaults.publish === 'allow';
    }
    // A read: a message delivered through a subscription granted in part (a topic name), or a
    // whole filter asked by a caller that has no scope question.
    const requested = parseFilter(topic);
    for (const rule of r.rules) {
      if (!rule.read) continue;
      const levels = expandAclPattern(rule.pattern, who.clientId, who.username);
      if (levels !== undefined && coverLevels(levels, requested)) return rule.allow;
    }
    return defaults.subscribe === undefined ? undefined : defaults.subscribe === 'allow';
  }

  scope(who: ClientIdentity, filter: string, walk: ScopeWalk): ReadScope | undefined {
    const r = this.rulesOf(who);
    if (r === undefined) return undefined;
    const defaults = this.settings.defaultAccess;
    const requested = parseFilter(filter);
    if (r.hasGate || defaults.subscribeFilter !== undefined) {
      let gate: boolean | undefined;
      for (const rule of r.rules) {
        if (!rule.gate) continue;
        if (rule.literal) {
          if (rule.pattern.source === filter) {
            gate = rule.allow;
            break;
          }
          continue;
        }
        const levels = expandAclPattern(rule.pattern, who.clientId, who.username);
        if (levels !== undefined && coverLevels(levels, requested)) {
          gate = rule.allow;
          break;
        }
      }
      gate ??= defaults.subscribeFilter === undefined ? undefined : defaults.subscribeFilter === 'allow';
      if (gate === false) return 'none';
      // As Mosquitto's dynamic security: the filter check alone answers the SUBSCRIBE; the read
      // rules decide each delivery, so a granted filter none of whose topics may be read is still
      // granted, and delivers nothing.
      if (gate === true) {
        const read = this.readScope(r, who, requested, walk);
        return read === 'none' ? 'some' : read;
      }
    }
    return this.readScope(r, who, requested, walk);
  }

  private readScope(r: Resolved, who: ClientIdentity, requested: FilterLevel[], walk: ScopeWalk): ReadScope | undefined {
    const decided = scopeOfRules(r.rules, (rule) => rule.read, who, requested, walk);
    if (decided !== undefined) return decided;
    const read = this.settings.defaultAccess.subscribe;
    return read === undefined ? undefined : walk.decide(read === 'allow');
  }

  /** The rules that apply to `who` now, or undefined when the database does not answer for it. */
  private rulesOf(who: ClientIdentity): Resolved | undefined {
    if (who.username === undefined) {
      const names = this.settings.anonymousRoles;
      if (names === null) return undefined;
      if (this.anonymous === null) this.anonymous = this.resolve(names);
      return this.anonymous;
    }
    if (this.clients.size === 0) return undefined;
    const client = this.clients.get(who.username);
    if (client === undefined) return undefined;
    let r = this.resolved.get(who.username);
    if (r === undefined) {
      r = this.resolve(client.roles);
      this.resolved.set(who.username, r);
    }
    return r;
  }

  private resolve(roleNames: readonly string[]): Resolved {
    const rules: CompiledRule[] = [];
    for (const name of roleNames) {
      const role = this.roles.get(name);
      if (role !== undefined) for (const rule of role) rules.push(rule);
    }
    return { rules, hasGate: rules.some((r) => r.gate) };
  }
}

function compileRules(role: WorkerRole): CompiledRule[] {
  const out: CompiledRule[] = [];
  for (const r of role.rules) {
    if (aclPatternProblem(r.topic) !== undefined) continue; // checked by the manager; never trusted
    out.push(compileRule(r));
  }
  return out;
}

function compileRule(r: RoleRule): CompiledRule {
  return {
    allow: r.permission === 'allow',
    publish: r.action === 'publish' || r.action === 'all',
    read: r.action === 'subscribe' || r.action === 'all',
    gate: r.action === 'subscribe-filter',
    literal: r.action === 'subscribe-filter' && r.literal === true,
    pattern: compileAclPattern(r.topic),
  };
}
