// Owns the contracts between the broker and its authentication and authorization providers.
import type { RateLimit } from '../broker/rate-limit.ts';

export type { RateLimit };

export interface AuthRequest {
  clientId: string;
  username?: string;
  password?: Buffer;
  remoteAddress: string;
  /** The verified client certificate's CN, set by a TLS listener when mqtt.tls.cnAsUsername is on
   * (or an endpoint's proxyProtocolCnAsUsername, from the PROXY header). */
  certificateCN?: string;
  /** The TLS-PSK identity the client proved it holds the key of, set by a PSK endpoint with
   * identityAsUsername: the client's username, its key the credential (no password is checked). */
  pskIdentity?: string;
  /** From a PROXY protocol v2 header (a balancer that terminated the client's TLS): the server
   * name the client asked for (SNI, PP2_TYPE_AUTHORITY). */
  serverName?: string;
  /** From a PROXY protocol v2 header: the CN of the client certificate the balancer verified
   * (PP2_TYPE_SSL), whether or not the endpoint takes it as the username. */
  proxyCertificateCN?: string;
  protocolVersion: 3 | 4 | 5;
}

/** An ACL rule given with a client's credentials (a JWT's acl claim): `topic` is an ACL pattern
 * (a topic filter with %u and %c). Checked before every other ACL. */
export interface AclGrant {
  permission: 'allow' | 'deny';
  action: 'publish' | 'subscribe' | 'all';
  topic: string;
}

/**
 * A client of a tenant (an application of the control platform): where its connection and its
 * messages count against its application's and organization's licence, shared by every worker.
 */
export interface TenantLink {
  readonly applicationId: string;
  readonly organizationId: string;
  /** Takes a connection in the application's and the organization's quota; false, with nothing
   * taken, when either is full (or the application is gone). */
  connect(): boolean;
  /** Gives back what connect took. */
  release(): void;
  /** Counts a received message; false when the application or organization is over its rate
   * for the current second (the connection is then throttled). */
  message(nowMs: number): boolean;
  /** A publish or subscription outside the tenant's namespace was refused. */
  denied(): void;
}

/** ok: the client may connect; `superuser` skips every ACL check; `acl` rules come with the
 * credentials; `rateLimit` is the client's own inbound rate limit, used instead of its
 * endpoint's rateLimit (an authenticator of built-in clients or roles sets it from the client's
 * or role's record; a limit with neither rate means none for this client, whatever its endpoint
 * says; absent: the endpoint's). 'unavailable': nobody could decide in time (CONNACK 0x88 / 3). */
export type AuthResult =
  | { ok: true; username?: string; superuser?: boolean; acl?: readonly AclGrant[]; tenant?: TenantLink; rateLimit?: RateLimit }
  | { ok: false; reason: 'bad_credentials' | 'not_authorized' | 'banned' | 'unavailable' };

export interface Authenticator {
  /** A decision now (no I/O or hashing needed: anonymous, a certificate) or later. */
  authenticate(req: AuthRequest): AuthResult | Promise<AuthResult>;
}

export type Action = 'publish' | 'subscribe';

/** What a subscription may read (acl-scope.ts): every topic its filter can match, some, or none. */
export type ReadScope = 'all' | 'some' | 'none';

/** Rules met along an ordered ACL that apply to some, not all, of a filter's topics. */
export interface Overlaps {
  allow: boolean;
  deny: boolean;
}

export interface ClientIdentity {
  clientId: string;
  username?: string;
  /** Set by an authentication policy: every ACL check is skipped. */
  superuser?: boolean;
  /** ACL rules that came with the credentials (a JWT's acl claim). */
  acl?: readonly AclGrant[];
  /** Set for a tenant's client (control platform): its licence counters. */
  tenant?: TenantLink;
  /** The client's own inbound rate limit (AuthResult.rateLimit), over its endpoint's. */
  rateLimit?: RateLimit;
}

export interface Authorizer {
  /** true when every topic is allowed for everyone (no rules): lets the broker skip the check on the hot path */
  readonly allowsEverything: boolean;
  /** Changes whenever the rules change (a reload): decisions cached under another value are stale. */
  readonly generation?: number;
  /** publish: may `who` publish to the topic name `topic`? subscribe: may it read the topics of
   * the filter `topic` (its $share/$queue prefix included)? A subscribe question about a topic
   * name is the read check of one delivered message. */
  authorize(who: ClientIdentity, action: Action, topic: string): boolean | Promise<boolean>;
  /** What a subscription to `filter` may read (acl-scope.ts): 'none' refuses it, 'some' marks it
   * so each delivery is checked with authorize(who, 'subscribe', topic). Without it, authorize()
   * answers for the whole filter ('all' or 'none'). `before`: the overlaps of the ACLs asked
   * before this one (a chain of policies that ignored). */
  subscribeScope?(who: ClientIdentity, filter: string, before?: Overlaps): ReadScope | Promise<ReadScope>;
}

/**
 * An enhanced-authentication method (MQTT 5.0 section 4.12), registered with the worker under its
 * Authentication Method name. Each exchange, at CONNECT or at a re-authentication (AUTH 0x19),
 * starts with the client's Authentication Data and goes on one step per AUTH 0x18 of the client;
 * the object a step answers with holds that connection's state until the next.
 */
export interface AuthMethod {
  start(req: AuthExchangeRequest): AuthStep | Promise<AuthStep>;
}

export interface AuthExchangeRequest {
  clientId: string;
  /** CONNECT: its User Name, if it had one. A re-authentication: the connection's username. */
  username?: string;
  /** The Authentication Data of the CONNECT or the AUTH 0x19. */
  data?: Buffer;
  remoteAddress: string;
  /** A re-authentication of a connected client (the answer's username must be its username). */
  reauthenticating: boolean;
}

/** continue: AUTH 0x18 with `data`; the client's next AUTH 0x18 goes to `next`. done: the
 * exchange is over: `result` decides the CONNECT (or the re-authentication), and `data` goes
 * with its CONNACK (or AUTH 0x00), also when refused (a SCRAM server-error, say). */
export type AuthStep =
  | { kind: 'continue'; data: Buffer; next: AuthContinuation }
  | { kind: 'done'; result: AuthResult; data?: Buffer };

export interface AuthContinuation {
  /** The client's next Authentication Data (undefined: its AUTH had none). */
  step(data: Buffer | undefined): AuthStep | Promise<AuthStep>;
}
