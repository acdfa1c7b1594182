// Authentication and ACL policies (spec 4.7): the contracts between the policy evaluators (one file
// per type, main thread: they own the database, HTTP, JWT and LDAP checks), the policy manager (the chain,
// the store, the admin routes) and the workers (which ask through a batched channel and cache the
// answers). Everything that crosses to a worker is plain data (postMessage).
import { DomainError } from '../errors/domain-error.ts';
import type { AclGrant, Overlaps } from '../auth/types.ts';
import type { TenantRef } from '../broker/tenant-counters.ts';
import type { RateLimit } from '../broker/rate-limit.ts';
import type { Logger } from '../log/index.ts';
import type { AnySource, SourceType } from '../sources/types.ts';

export type { AclGrant };

/** Authentication policies answer CONNECTs; ACL policies answer PUBLISHes and SUBSCRIBEs. */
export type PolicyKind = 'auth' | 'acl';

export const AUTH_POLICY_TYPES = ['database', 'http', 'jwt', 'ldap'] as const;
export type AuthPolicyType = (typeof AUTH_POLICY_TYPES)[number];

export const ACL_POLICY_TYPES = ['database', 'http', 'ldap'] as const;
export type AclPolicyType = (typeof ACL_POLICY_TYPES)[number];

/** A policy as stored (admin kinds 'auth-policy' and 'acl-policy') and, redacted, as answered. */
export interface PolicyRecord<T extends string = string> {
  id: string;
  name: string;
  type: T;
  /** The normalized config of its type (passwords and secrets kept, never answered). */
  config: Record<string, unknown>;
  enabled: boolean;
  /** Place in the chain: lower first; equal orders by createTime. */
  order: number;
  createTime: string;
}

/** What an authentication policy is asked. */
export interface AuthQuery {
  clientid: string;
  username?: string;
  password?: Buffer;
  peerhost: string;
  /** The server name (SNI) the client asked its balancer for, from a PROXY v2 header. */
  sni?: string;
  /** The CN of the client certificate its balancer verified, from a PROXY v2 header. */
  certCommonName?: string;
}

/**
 * allow: the credentials are good (superuser skips every ACL; a JWT may carry its own ACL rules,
 * checked before the ACL policies, and the username to use; `validUntil`, ms since the epoch: a
 * cached allow is dropped then, e.g. at a JWT's exp; `tenant`: an application of the control
 * platform, whose licence counters the client counts in). deny: they are wrong (CONNACK 0x86).
 * ignore: this policy does not know the client (no row, no token, HTTP said ignore): the next one
 * decides. `error` marks an ignore caused by a failure (source down, timeout, bad answer): logged
 * and counted, never cached.
 */
export type AuthAnswer =
  | { result: 'allow'; superuser: boolean; username?: string; acl?: AclGrant[]; validUntil?: number; tenant?: TenantRef; rateLimit?: RateLimit }
  | { result: 'deny'; reason: string }
  | { result: 'ignore'; reason?: string; error?: boolean };

/** What an authentication policy is asked for a SCRAM sign-in (src/auth/scram): the stored
 * credentials of `mechanism` for the username; no password ever comes with it. */
export interface ScramQuery {
  clientid: string;
  username: string;
  peerhost: string;
  mechanism: 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
}

/** allow: the credentials in RFC 5803 form (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`),
 * used once the worker verified the client's proof with them (`superuser` as for a password).
 * ignore: the policy has none for the username (the next one is asked); `error` as in AuthAnswer. */
export type ScramAnswer =
  | { result: 'allow'; credentials: string; superuser: boolean }
  | { result: 'ignore'; reason?: string; error?: boolean };

/** What an ACL policy is asked. `topic` is the published topic or the requested subscription
 * filter (without its $share/<group>/ prefix). */
export interface AclQuery {
  clientid: string;
  username?: string;
  peerhost: string;
  action: 'publish' | 'subscribe';
  topic: string;
}

/** `overlaps`: for a subscribe question about a filter, the rules met before the decision (or
 * before ignoring) that apply to some, not all, of its topics (auth/acl-scope.ts). */
export type AclAnswer = { result: 'allow' | 'deny'; overlaps?: Overlaps } | { result: 'ignore'; reason?: string; error?: boolean; overlaps?: Overlaps };

/** The query parameters a policy's templates read: a cached answer is keyed by these (and the password). */
export type PolicyParam = 'username' | 'clientid' | 'peerhost' | 'password' | 'topic' | 'action' | 'sni' | 'cert_common_name';

export interface CompiledAuthPolicy {
  readonly id: string;
  readonly name: string;
  readonly type: AuthPolicyType | 'platform';
  /** The parameters its answer depends on besides the password. */
  readonly params: ReadonlySet<PolicyParam>;
  /** Never rejects: a failure is { result: 'ignore', error: true } with the reason. */
  authenticate(q: AuthQuery): Promise<AuthAnswer>;
  /** The SCRAM credentials a policy keeps (the database type); a policy without it is not asked.
   * Never rejects, like authenticate. */
  scramCredentials?(q: ScramQuery): Promise<ScramAnswer>;
  /** Runs the configured query (or request) once with sample parameters: rejects with a
   * PolicyConfigError naming the field when it cannot run (syntax, missing column, unreachable). */
  dryRun(): Promise<void>;
  /** Ends a pool the policy owns (its own `datasource`); a shared data source stays open. */
  close(): Promise<void>;
}

export interface CompiledAclPolicy {
  readonly id: string;
  readonly name: string;
  readonly type: AclPolicyType;
  readonly params: ReadonlySet<PolicyParam>;
  /** Never rejects: a failure is { result: 'ignore', error: true }. */
  authorize(q: AclQuery): Promise<AclAnswer>;
  dryRun(): Promise<void>;
  close(): Promise<void>;
}

/** A policy field is wrong: a domain error, 400 INVALID_PARAMETER naming `field` (e.g. `config.sql`). */
export class PolicyConfigError extends DomainError {
  declare readonly field: string;
  constructor(field: string, message: string) {
    super('INVALID_PARAMETER', `${field}: ${message}`, { field });
    this.name = 'PolicyConfigError';
  }
}

/** What a policy evaluator may use: the shared data sources (by id) and the log. */
export interface PolicyContext {
  /** The live data source `id` of the admin API (undefined once deleted). */
  source(id: string): AnySource | undefined;
  /** The type of data source `id`, or undefined when there is none. */
  typeOf(id: string): SourceType | undefined;
  log: Logger;
}
